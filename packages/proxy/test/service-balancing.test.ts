// A Service backend balanced over real endpoints: several HTTP servers on loopback ports as
// the ready endpoints of one Service, in snapshots pushed through a proxy process's snapshot
// source (the path the controller stream takes) and encoded as on the wire. Under concurrent
// load a slow endpoint gets fewer requests than fast ones; an endpoint that refuses
// connections is ejected while traffic goes on, and gets traffic again once it is back;
// endpoints replaced under continuous load cost no request, and one that left gets no request
// sent after the swap. The clock of the ejections and of the fading of scores is the test's:
// it moves when the test says, never during a step.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { decodeSnapshot, encodeSnapshot, standaloneToSnapshot, validateStandaloneConfig, withVersion, type BackendIR, type ProxySnapshot, type ServiceEndpointsIR } from '@tollgate/api';
import { until } from '@tollgate/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ProxyProcess } from '../src/process/proxy-process.js';
import type { SnapshotSink, SnapshotSource, SnapshotSourceState } from '../src/source/snapshot-source.js';
import type { TraceEvent } from '@tollgate/api';
import { freePort, onFreePort, openTrace, send, simpleConfig } from './helpers.js';

/** Applies what the test pushes, as a controller stream does. */
class PushSource implements SnapshotSource {
  readonly name = 'test stream';
  #sink: SnapshotSink | null = null;
  #applied = 0;
  async start(sink: SnapshotSink): Promise<void> {
    this.#sink = sink;
  }
  stop(): void {
    this.#sink = null;
  }
  async push(snapshot: ProxySnapshot): Promise<void> {
    await this.#sink!.apply(decodeSnapshot(encodeSnapshot(snapshot)));
    this.#applied++;
  }
  state(): SnapshotSourceState {
    return { kind: 'test', applied: this.#applied, refused: 0, lastError: null, version: null };
  }
}

/**
 * Requests the load has in flight and answers the endpoints gave, shared by the endpoints of a
 * test: a slow endpoint (`holdFor`) holds each answer until the others have answered that many
 * requests since it arrived, or until every request in flight is one it holds. Slow by events,
 * not by a clock: the test never depends on how long anything takes.
 */
const traffic = { inFlight: 0, answered: 0, waiting: new Set<{ ready: () => boolean; answer: () => void }>() };
function progress(): void {
  for (const w of traffic.waiting) {
    if (!w.ready()) continue;
    traffic.waiting.delete(w);
    w.answer();
  }
}

/** A real endpoint: answers its name (held as above when `holdFor` is given) and records the `x-seq` of each request. */
interface Endpoint {
  readonly name: string;
  readonly port: number;
  readonly server: Server;
  readonly seqs: number[];
  close(): Promise<void>;
}

async function endpoint(name: string, opts: { port?: number; delayMs?: number; holdFor?: number } = {}): Promise<Endpoint> {
  const seqs: number[] = [];
  let held = 0;
  const server = createServer((req, res) => {
    seqs.push(Number(req.headers['x-seq'] ?? -1));
    const answer = () => {
      traffic.answered++;
      res.end(name);
      progress();
    };
    if (opts.holdFor !== undefined) {
      const mark = traffic.answered;
      held++;
      traffic.waiting.add({
        ready: () => traffic.answered - mark >= opts.holdFor! || traffic.inFlight <= held,
        answer: () => {
          held--;
          answer();
        },
      });
      progress();
    } else if (opts.delayMs) {
      // A slow model server: its answer takes this long (the test asserts shares, never times).
      setTimeout(answer, opts.delayMs);
    } else {
      answer();
    }
  });
  // Idle connections stay open until the proxy closes them (a closed pool shows as no connection left).
  server.keepAliveTimeout = 120_000;
  server.listen(opts.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    name,
    port,
    server,
    seqs,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

const SERVICE = 'llm.models.svc.cluster.local:80';

/** A Service backend, and its ready endpoints (the snapshot's entry of its name): `ports` on 127.0.0.1. */
interface Served {
  readonly backend: BackendIR;
  readonly entry: ServiceEndpointsIR;
}

function service(ports: number[], name = 'llm', weight = 1): Served {
  const backend: BackendIR = { kind: 'service', name: `${name}.models.svc.cluster.local:80`, namespace: 'models', service: name, port: 80, weight };
  return { backend, entry: { name: backend.name, endpoints: [...ports].sort((x, y) => x - y).map((port) => ({ address: '127.0.0.1', port })) } };
}

const isPorts = (list: number[] | Served[]): list is number[] => list.every((x) => typeof x === 'number');

interface Proxy {
  readonly proc: ProxyProcess<PushSource>;
  readonly url: string;
  readonly admin: string;
  readonly clock: { now: number };
  /** Pushes the one route with these endpoints (or these backends); resolves once the snapshot serves. */
  serve(ports: number[] | Served[]): Promise<void>;
  dump(): Promise<DumpEndpoint[]>;
}

interface DumpEndpoint {
  address: string;
  health: number;
  requests: number;
  latencyMs: number;
  inFlight: number;
  ejectedUntil: string | null;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function startProxy(): Promise<Proxy> {
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
  const proc = await ProxyProcess.start({
    settings: {},
    source: () => new PushSource(),
    adminAddr: '127.0.0.1:0',
    metricsAddr: '127.0.0.1:0',
    readinessAddr: '127.0.0.1:0',
    clock: () => clock.now,
    logDestination: new Writable({ write: (_c, _e, cb) => cb() }),
  });
  cleanups.push(() => proc.close());
  // The port is taken by a first snapshot of its own: one that loses the port to another
  // process between probe and bind is refused, and tried again on another port.
  const { port, base } = await onFreePort(async (port) => {
    const base = standaloneToSnapshot(validateStandaloneConfig(simpleConfig(port, [{ name: 'chat', backends: [{ host: '127.0.0.1:9' }] }]), 'pushed'), { kind: 'controller', gateway: 'edge/public' });
    await proc.runtime.apply(base);
    return { port, base };
  });
  const admin = `http://${proc.admin.address}`;
  return {
    proc,
    url: `http://127.0.0.1:${port}`,
    admin,
    clock,
    serve: (ports) => {
      const served = isPorts(ports) ? [service(ports)] : ports;
      return proc.source.push(
        withVersion({
          source: base.source,
          binds: base.binds.map((b) => ({
            ...b,
            listeners: b.listeners.map((l) => ({ ...l, routes: l.routes.map((r) => ({ ...r, backends: served.map((s) => s.backend) })) })),
          })),
          endpoints: served.map((s) => s.entry).sort((x, y) => (x.name < y.name ? -1 : 1)),
        }),
      );
    },
    dump: async () => {
      const d = JSON.parse((await send(`${admin}/config_dump`)).body) as { backends: { name: string; endpoints: DumpEndpoint[] }[] };
      return d.backends.find((b) => b.name === SERVICE)!.endpoints;
    },
  };
}

/** `total` requests, `concurrency` at a time; the statuses and bodies in order of completion. */
async function load(url: string, total: number, concurrency: number): Promise<{ status: number; body: string }[]> {
  const out: { status: number; body: string }[] = [];
  let issued = 0;
  const worker = async () => {
    while (issued < total) {
      issued++;
      traffic.inFlight++;
      const r = await send(`${url}/v1/chat/completions`).finally(() => traffic.inFlight--);
      progress();
      out.push({ status: r.status, body: r.body });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

const tally = (bodies: string[]) => bodies.reduce<Record<string, number>>((m, b) => ((m[b] = (m[b] ?? 0) + 1), m), {});

describe('a Service backend over real endpoints', () => {
  it('sends fewer requests to a slow endpoint than to fast ones under concurrency', async () => {
    const fast1 = await endpoint('fast1');
    const fast2 = await endpoint('fast2');
    // Each answer of the slow one waits for ten answers of the others.
    const slow = await endpoint('slow', { holdFor: 10 });
    cleanups.push(() => fast1.close(), () => fast2.close(), () => slow.close());
    const p = await startProxy();
    await p.serve([fast1.port, fast2.port, slow.port]);
    const results = await load(p.url, 90, 6);
    expect(results.every((r) => r.status === 200)).toBe(true);
    const counts = tally(results.map((r) => r.body));
    expect(counts.fast1! + counts.fast2! + (counts.slow ?? 0)).toBe(90);
    expect(counts.slow ?? 0).toBeLessThan(counts.fast1!);
    expect(counts.slow ?? 0).toBeLessThan(counts.fast2!);
    await until(async () => (await p.dump()).every((e) => e.inFlight === 0), { what: 'no request in flight' });
  });

  it('ejects an endpoint that refuses connections, keeps serving from the others, and uses it again once it is back', async () => {
    const a = await endpoint('a');
    const b = await endpoint('b');
    const deadPort = await freePort();
    cleanups.push(() => a.close(), () => b.close());
    const p = await startProxy();
    await p.serve([a.port, b.port, deadPort]);
    const deadAddress = `127.0.0.1:${deadPort}`;

    // Round robin while nothing is known: the dead endpoint's turn comes within three requests;
    // the request it refused goes to another endpoint, so every answer is 200.
    const first: number[] = [];
    const dead = async () => (await p.dump()).find((e) => e.address === deadAddress)!;
    for (let i = 0; i < 3 && (await dead()).ejectedUntil === null; i++) first.push((await send(`${p.url}/x`)).status);
    expect(first).toEqual(Array(first.length).fill(200));
    const ejected = await dead();
    expect(ejected.ejectedUntil).toBe('2026-01-01T00:00:01.000Z');
    expect(ejected.health).toBeLessThan(1);

    // While it is ejected (the clock does not move) every request goes to the others.
    const during = await load(p.url, 30, 3);
    expect(during.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(Object.keys(tally(during.map((r) => r.body))).sort()).toEqual(['a', 'b']);

    // Back on the same address; once the ejection is over and the failure has faded it gets its share.
    const back = await endpoint('back', { port: deadPort });
    cleanups.push(() => back.close());
    p.clock.now += 120_000;
    const after = await load(p.url, 30, 3);
    expect(after.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(tally(after.map((r) => r.body)).back).toBeGreaterThan(0);
    const row = (await p.dump()).find((e) => e.address === deadAddress)!;
    expect(row.ejectedUntil).toBeNull();
    expect(row.health).toBeGreaterThan(ejected.health);
  });

  it('replaces endpoints under continuous load without a failed request; one that left gets nothing sent after the swap', async () => {
    const eps = await Promise.all(['e1', 'e2', 'e3', 'e4', 'e5'].map((n) => endpoint(n)));
    cleanups.push(...eps.map((e) => () => e.close()));
    const [e1, e2, e3, e4, e5] = eps as [Endpoint, Endpoint, Endpoint, Endpoint, Endpoint];
    const p = await startProxy();
    await p.serve([e1.port, e2.port]);

    // Continuous load: each request carries the sequence number it was issued with.
    let seq = 0;
    let stop = false;
    const statuses: number[] = [];
    let progressed: (() => void) | null = null;
    const worker = async () => {
      while (!stop) {
        const r = await send(`${p.url}/x`, { headers: { 'x-seq': String(seq++) } });
        statuses.push(r.status);
        progressed?.();
      }
    };
    /** Resolves once `n` more requests have completed. */
    const completed = (n: number) => {
      const target = statuses.length + n;
      return new Promise<void>((resolve) => {
        progressed = () => {
          if (statuses.length >= target) resolve();
        };
      });
    };
    const workers = Array.from({ length: 4 }, worker);

    const kept = () => p.proc.runtime.endpoints.get(`127.0.0.1:${e2.port}`);
    await completed(20);
    const e2State = kept()!;
    const steps: { ports: number[]; removed: Endpoint[] }[] = [
      { ports: [e1.port, e2.port, e3.port], removed: [] },
      { ports: [e2.port, e3.port], removed: [e1] },
      { ports: [e3.port, e4.port], removed: [e2] },
      { ports: [e4.port, e5.port], removed: [e3] },
    ];
    /** For each endpoint that left: the first sequence number issued after its removal was applied. */
    const boundary = new Map<Endpoint, number>();
    // While e2 stays, its state object is the one it had from the start (checked at each step it is in).
    const e2Kept: boolean[] = [];
    for (const step of steps) {
      await p.serve(step.ports);
      for (const e of step.removed) boundary.set(e, seq);
      if (step.ports.includes(e2.port)) e2Kept.push(kept() === e2State);
      await completed(20);
    }
    expect(e2Kept).toEqual([true, true]);
    stop = true;
    await Promise.all(workers);

    expect(statuses.length).toBeGreaterThanOrEqual(100);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // The state of an endpoint that stayed was carried over (its count kept growing across swaps).
    expect(e2State.requests).toBe(e2.seqs.length);
    for (const [e, first] of boundary) {
      expect(e.seqs.length).toBeGreaterThan(0);
      expect(Math.max(...e.seqs)).toBeLessThan(first);
    }
    expect(e5.seqs.length).toBeGreaterThan(0);
    // The pools of the endpoints that left close once idle: their servers see every connection go.
    for (const e of [e1, e2, e3]) {
      await until(() => new Promise<boolean>((r) => e.server.getConnections((_err, n) => r(n === 0))), { what: `${e.name}'s connections to close` });
    }
    expect(p.proc.runtime.endpoints.size).toBe(2);
  });

  it('keeps the backendRef weights across Services: a slow Service keeps its share, a weight of 0 gets nothing', async () => {
    const slow = await endpoint('slow', { delayMs: 50 });
    const fast1 = await endpoint('fast1');
    const fast2 = await endpoint('fast2');
    const never = await endpoint('never');
    cleanups.push(() => slow.close(), () => fast1.close(), () => fast2.close(), () => never.close());
    const p = await startProxy();
    // Least request chooses within a Service only; between Services the weights decide.
    await p.serve([service([slow.port], 'slow'), service([fast1.port, fast2.port], 'fast'), service([never.port], 'never', 0)]);
    const results = await load(p.url, 80, 6);
    expect(results.every((r) => r.status === 200)).toBe(true);
    const counts = tally(results.map((r) => r.body));
    expect(counts.never).toBeUndefined();
    // Each of two equal weights gets a binomial(80, 1/2) share: fewer than 15 has a probability below 1e-8.
    expect(counts.slow).toBeGreaterThanOrEqual(15);
    expect(counts.fast1! + counts.fast2!).toBeGreaterThanOrEqual(15);
  });

  it('names the Service as the backend in the trace and the endpoint as the call target', async () => {
    const a = await endpoint('a');
    cleanups.push(() => a.close());
    const p = await startProxy();
    await p.serve([a.port]);
    const trace = await openTrace(p.admin);
    await trace.armed;
    expect((await send(`${p.url}/x`)).status).toBe(200);
    const events: TraceEvent[] = await trace.events;
    const messages = events.map((e) => e.message);
    const final = messages.find((m) => m.type === 'requestSnapshot' && m.stage === 'final request');
    if (final?.type !== 'requestSnapshot') throw new Error('no final request snapshot');
    expect(final.requestState.backend).toEqual({ name: SERVICE, type: 'service', protocol: 'http' });
    expect(messages.find((m) => m.type === 'backendCallStart')).toEqual({ type: 'backendCallStart', target: `127.0.0.1:${a.port}` });
  });

  it('lists the backends and their endpoints at /backends, narrowed by name or namespace, and refuses bad filters', async () => {
    const a = await endpoint('a');
    cleanups.push(() => a.close());
    const p = await startProxy();
    await p.serve([a.port]);
    expect((await send(`${p.url}/x`)).status).toBe(200);
    const get = async (query: string) => {
      const r = await send(`${p.admin}/backends${query}`);
      return { status: r.status, body: r.status === 200 ? (JSON.parse(r.body) as { version: string; backends: { name: string; namespace: string; endpoints: DumpEndpoint[] }[] }) : r.body };
    };
    const all = await get('');
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      version: p.proc.snapshot.version,
      backends: [
        {
          type: 'Service',
          name: SERVICE,
          namespace: 'models',
          host: 'llm',
          port: 80,
          // Plain HTTP: no BackendTLSPolicy names the Service.
          tls: null,
          // Not cooling down: no 429 or 503 answered a route that fails over or retries.
          coolDown: null,
          endpoints: [{ address: `127.0.0.1:${a.port}`, health: 1, requests: 1, inFlight: 0, ejectedUntil: null, latencyMs: expect.any(Number) as number }],
        },
      ],
    });
    expect(await get(`?name=${SERVICE}&namespace=models`)).toEqual(all);
    expect(await get('?name=other.models.svc.cluster.local:80')).toEqual({ status: 200, body: { version: p.proc.snapshot.version, backends: [] } });
    expect(await get('?namespace=elsewhere')).toEqual({ status: 200, body: { version: p.proc.snapshot.version, backends: [] } });
    for (const [query, message] of [
      ['?service=llm', /"service".*expected name, namespace/],
      ['?name=', /^name must be given once, non-empty .*e\.g\. \?name=/],
      ['?name=a&name=b', /^name must be given once/],
      [`?namespace=${'x'.repeat(513)}`, /^namespace must be given once, non-empty and at most 512 characters/],
    ] as const) {
      const r = await send(`${p.admin}/backends${query}`);
      expect(r.status, query).toBe(400);
      expect(r.headers['x-tollgate-error'], query).toBe(query.startsWith('?service') ? 'TG_ADMIN_UNKNOWN_QUERY' : 'TG_ADMIN_BACKENDS_FILTER');
      expect(r.body, query).toMatch(message);
    }
    // The proxy still answers after the refusals.
    expect((await get('')).status).toBe(200);
  });
});
