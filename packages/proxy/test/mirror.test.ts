// RequestMirror, as the controller sends it: a snapshot whose route copies its requests to a
// mirror Service is applied over the wire encoding; real upstream servers on loopback receive
// the original and the copy. The copy carries the request as the route's filters left it
// (method, path and query, headers, body); the client's answer is the primary backend's and
// never waits on, or fails with, the mirror.
import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, withVersion, type BackendIR, type FilterIR, type ProxySnapshot } from '@tollgate/api';
import { mirrorsInFlight } from '../src/pipeline/mirror.js';
import { endpointsOf, service } from './support/service-backend.js';
import { freePort, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const mirror = (backend: BackendIR, numerator = 1, denominator = 1): FilterIR => ({ type: 'RequestMirror', backend, numerator, denominator });

/** The gateway's one route with these filters and backends, sent over the wire and applied. */
/** The gateway's routes with these filters and backends; `ports`: the loopback port of each Service they name (service()). */
async function applyRoute(gw: TestGateway, filters: FilterIR[], backends: BackendIR[], ports: Record<string, number>): Promise<ProxySnapshot> {
  const current = gw.gateway.snapshot;
  const next = withVersion({
    source: { kind: 'controller', gateway: 'default/gw' },
    binds: current.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, filters, backends })) })) })),
    endpoints: endpointsOf(ports),
  });
  const received = decodeSnapshot(encodeSnapshot(next));
  await gw.gateway.runtime.apply(received);
  return received;
}

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** An upstream that records what it receives and answers `name` (or never, when `hang`). */
async function recorder(name: string, opts: { hang?: boolean } = {}): Promise<Upstream & { seen: Seen[] }> {
  const seen: Seen[] = [];
  const up = await startUpstream((req, res, body) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: body.toString() });
    if (!opts.hang) res.end(name);
  });
  cleanup.push(() => up.close());
  return Object.assign(up, { seen });
}

/** Polls a condition the copies make true (they end after the client's answer: no event to await). */
async function until(what: string, done: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function gateway(primary: Upstream): Promise<TestGateway> {
  const gw = await startGateway(simpleConfig(await freePort(), [{ name: 'r', backends: [{ host: primary.host }] }]));
  cleanup.push(() => gw.close());
  return gw;
}

describe('RequestMirror', () => {
  it('sends each mirror a copy of the request as the route filters left it, body included; the client gets the primary answer', async () => {
    const primary = await recorder('primary');
    const shadow = await recorder('shadow');
    const second = await recorder('second');
    const gw = await gateway(primary);
    await applyRoute(
      gw,
      [
        { type: 'RequestHeaderModifier', set: [{ name: 'x-set', value: 'by-route' }], add: [], remove: ['x-gone'] },
        mirror(service('shadow')),
        mirror(service('second')),
      ],
      [service('primary')],
      { primary: primary.port, shadow: shadow.port, second: second.port },
    );
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'copy me' }] });
    const res = await send(`${gw.url}/v1/chat?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gone': 'yes' }, body });
    expect(res.status).toBe(200);
    expect(res.body).toBe('primary');
    await until('both mirrors received the copy', () => shadow.seen.length === 1 && second.seen.length === 1);
    for (const copy of [shadow.seen[0]!, second.seen[0]!]) {
      expect(copy).toMatchObject({ method: 'POST', url: '/v1/chat?x=1', body });
      expect(copy.headers['x-set']).toBe('by-route');
      expect(copy.headers['x-gone']).toBeUndefined();
      expect(copy.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    }
    expect(primary.seen).toHaveLength(1);
    expect(primary.seen[0]!.body).toBe(body);
  });

  it('never holds the client on a mirror that does not answer, nor fails it for a mirror that refuses', async () => {
    const primary = await recorder('primary');
    const silent = await recorder('silent', { hang: true });
    const refusing = await freePort();
    const gw = await gateway(primary);
    await applyRoute(gw, [mirror(service('silent')), mirror(service('refusing'))], [service('primary')], { primary: primary.port, silent: silent.port, refusing });
    for (let i = 0; i < 3; i++) {
      const res = await send(`${gw.url}/get-${i}`);
      expect(res.status).toBe(200);
      expect(res.body).toBe('primary');
    }
    // The silent mirror holds its copies; the answers above did not wait for them.
    await until('the silent mirror received every copy', () => silent.seen.length === 3);
    expect(silent.seen.map((s) => s.url)).toEqual(['/get-0', '/get-1', '/get-2']);
    expect(mirrorsInFlight()).toBeGreaterThanOrEqual(3);
  });

  it('copies the share of requests the mirror asks for; an unresolved mirror backend gets none', async () => {
    const primary = await recorder('primary');
    const half = await recorder('half');
    const none = await recorder('none');
    const gw = await gateway(primary);
    await applyRoute(
      gw,
      [mirror(service('half'), 25, 50), mirror(service('none'), 0, 100), mirror({ kind: 'invalid', name: 'other/shadow', weight: 1, reason: 'RefNotPermitted' })],
      [service('primary')],
      { primary: primary.port, half: half.port, none: none.port },
    );
    const n = 400;
    for (let i = 0; i < n; i++) expect((await send(`${gw.url}/share`)).status).toBe(200);
    await until('no copy in flight', () => mirrorsInFlight() === 0);
    expect(primary.seen).toHaveLength(n);
    // Half of 400: the chance of falling outside 120..280 by luck is below 1e-15.
    expect(half.seen.length).toBeGreaterThan(120);
    expect(half.seen.length).toBeLessThan(280);
    expect(none.seen).toHaveLength(0);
  });

  it('does not mirror a body larger than maxRequestBodyBytes, which still reaches the primary backend whole', async () => {
    const primary = await recorder('primary');
    const shadow = await recorder('shadow');
    const gw = await startGateway({ config: { maxRequestBodyBytes: 1024 }, ...simpleConfig(await freePort(), [{ name: 'r', backends: [{ host: primary.host }] }]) });
    cleanup.push(() => gw.close());
    await applyRoute(gw, [mirror(service('shadow'))], [service('primary')], { primary: primary.port, shadow: shadow.port });
    const large = 'x'.repeat(4096);
    const res = await send(`${gw.url}/large`, { method: 'POST', body: large });
    expect(res.status).toBe(200);
    expect(primary.seen[0]!.body).toBe(large);
    // A small body right after is mirrored: the large one would have arrived first.
    expect((await send(`${gw.url}/small`, { method: 'POST', body: 'small' })).status).toBe(200);
    await until('the small body mirrored', () => shadow.seen.length >= 1);
    expect(shadow.seen.map((s) => s.url)).toEqual(['/small']);
  });
});
