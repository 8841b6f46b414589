// RequestMirror on a route that counts tokens: a mirrored copy spends provider tokens, so it
// counts against the same budget as its request. Over real sockets: a route with a local token
// budget, its mirror applied over the snapshot wire encoding as the controller sends it, and
// real backends that report usage (or hold their answers until the test releases them).
import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, withVersion, type FilterIR } from '@tollgate/api';
import { mirrorsInFlight } from '../src/pipeline/mirror.js';
import { endpointsOf, service } from './support/service-backend.js';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';
import { send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway, type Upstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const completion = (total: number) => JSON.stringify({ choices: [{ message: { content: 'ok' } }], usage: { total_tokens: total } });

/** A chat backend answering `status` with `total` tokens of usage, or holding its answers until released. */
interface Llm {
  readonly upstream: Upstream;
  readonly events: EventEmitter;
  arrived: number;
  answered: number;
  release(): void;
}

async function llm(total: number, opts: { hold?: boolean; status?: number } = {}): Promise<Llm> {
  const held: ServerResponse[] = [];
  const events = new EventEmitter();
  const answer = (res: ServerResponse) => {
    res.writeHead(opts.status ?? 200, { 'content-type': 'application/json' });
    res.end(opts.status ? '{"error":{"message":"no"}}' : completion(total));
    res.on('finish', () => {
      state.answered++;
      events.emit('progress');
    });
  };
  const upstream = await startUpstream((_req, res) => {
    state.arrived++;
    if (opts.hold) held.push(res);
    else answer(res);
    events.emit('progress');
  });
  cleanups.push(() => upstream.close());
  const state: Llm = {
    upstream,
    events,
    arrived: 0,
    answered: 0,
    release: () => {
      for (const res of held.splice(0)) answer(res);
    },
  };
  return state;
}

/** A standalone gateway with one metered route, then the snapshot the controller would send: that route mirrored. */
async function mirroredGateway(primary: Llm, shadow: Llm, tokens: number | Record<string, unknown>): Promise<TestGateway> {
  const rateLimit = typeof tokens === 'number' ? { local: [{ tokens, unit: 'Hours' }] } : tokens;
  const route = { name: 'chat', policies: { traffic: { rateLimit } }, backends: [{ host: primary.upstream.host }] };
  const gw = await startGateway((port) => simpleConfig(port, [route]));
  cleanups.push(() => gw.close());
  const current = gw.gateway.snapshot;
  const filters: FilterIR[] = [{ type: 'RequestMirror', backend: service('shadow'), numerator: 1, denominator: 1 }];
  const next = withVersion({
    source: { kind: 'controller', gateway: 'default/gw' },
    binds: current.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, filters, backends: [service('primary')] })) })) })),
    endpoints: endpointsOf({ primary: primary.upstream.port, shadow: shadow.upstream.port }),
  });
  await gw.gateway.runtime.apply(decodeSnapshot(encodeSnapshot(next)));
  return gw;
}

function chat(gw: TestGateway, maxTokens?: number, headers: Record<string, string> = {}): Promise<RawResponse> {
  return send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }) }),
  });
}

async function tokensCounted(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  return [...text.matchAll(/^tollgate_llm_tokens_total\{route="main\/chat",model="m",source="\w+"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** Polls until no copy is in flight: a copy ends after its request's answer, with no event to await. */
async function copiesDone(): Promise<void> {
  await expect.poll(() => mirrorsInFlight(), { timeout: 30_000 }).toBe(0);
}

describe('a mirrored request on a metered route', () => {
  it("is charged the mirror's usage against the same budget", async () => {
    const primary = await llm(10);
    const shadow = await llm(5000);
    const gw = await mirroredGateway(primary, shadow, 1000);
    expect((await chat(gw)).status).toBe(200);
    await copiesDone();
    expect(shadow.answered).toBe(1);
    // The request's 10 tokens and its copy's 5,000: the budget of 1,000 is spent.
    expect(await tokensCounted(gw)).toBe(5010);
    const next = await chat(gw);
    expect(next.status).toBe(429);
    expect(primary.arrived).toBe(1);
    expect(shadow.arrived).toBe(1);
  });

  it("holds the request's reservation again while the copy is in flight", async () => {
    const primary = await llm(10, { hold: true });
    const shadow = await llm(10, { hold: true });
    const gw = await mirroredGateway(primary, shadow, 1000);
    // Each request reserves 1 + 400 tokens, and its copy as much again: two requests in flight
    // hold 1,604 of 1,000, so a third is refused. Reserved once per request, the third passed.
    const outcomes: string[] = [];
    const pending: Promise<RawResponse>[] = [];
    for (let i = 0; i < 3; i++) {
      const before = primary.arrived;
      const r = chat(gw, 400);
      pending.push(r);
      let answered: RawResponse | null = null;
      void r.then((x) => {
        answered = x;
        primary.events.emit('progress');
      });
      while (answered === null && primary.arrived === before) await once(primary.events, 'progress');
      outcomes.push(answered === null ? 'in flight' : String((answered as RawResponse).status));
    }
    expect(outcomes).toEqual(['in flight', 'in flight', '429']);
    primary.release();
    shadow.release();
    await Promise.all(pending);
    await copiesDone();
    expect(await tokensCounted(gw)).toBe(40);
  });

  it('charges nothing for a copy the mirror does not answer with 2xx, and gives its reservation back', async () => {
    const primary = await llm(10);
    const shadow = await llm(0, { status: 500 });
    const gw = await mirroredGateway(primary, shadow, 1000);
    expect((await chat(gw, 400)).status).toBe(200);
    await copiesDone();
    expect(shadow.answered).toBe(1);
    expect(await tokensCounted(gw)).toBe(10);
    // 1,000 less the first request's 10 and this one's own reservation of 401.
    expect((await chat(gw, 400)).headers['x-ratelimit-remaining']).toBe(String(1000 - 10 - 401));
  });
});

const availability = rlsAvailability();

describe.skipIf(!availability.run)('a mirrored request under a global Tokens descriptor', () => {
  let rls: RlsService;
  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: { 'mirror-tokens': 'domain: mirror-tokens\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: day, requests_per_unit: 100 }\n' } });
  });
  afterAll(async () => {
    await rls?.stop();
  });

  it("charges the mirror's usage to the rate limit service", async () => {
    const primary = await llm(10);
    const shadow = await llm(500);
    const gw = await mirroredGateway(primary, shadow, {
      global: { service: { host: rls.address }, timeout: '2s', domain: 'mirror-tokens', descriptors: [{ unit: 'Tokens', entries: [{ name: 'tenant', expression: 'request.headers["x-tenant"]' }] }] },
    });
    const tenant = { 'x-tenant': `t-${randomUUID()}` };
    expect((await chat(gw, undefined, tenant)).status).toBe(200);
    await copiesDone();
    // The charge is a call to the service after the copy's answer, which a request can
    // overtake: a few more, each a round trip later, until one is refused. Their own 10 tokens
    // each (60 in all) could not cross the limit of 100: only the copy's 500 makes it refuse.
    let over: RawResponse | undefined;
    for (let i = 0; i < 5 && over?.status !== 429; i++) over = await chat(gw, undefined, tenant);
    expect(over!.status).toBe(429);
  });
});
