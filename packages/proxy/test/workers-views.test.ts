// The admin views of what each thread keeps of its own are the process's: /config_dump's
// resolved names, /backends' endpoint counters and /debug/tasks' requests in flight and trace
// sessions include what the worker threads hold, not only the main thread's; request ids are
// unique across the threads; a worker that does not give its part in time is named, and the
// view still comes.
// Real sockets throughout; requests go on connections of their own until GET /workers shows
// that the worker thread took some (the kernel picks a thread per connection). Worker threads
// run the built proxy (dist/).
import { once } from 'node:events';
import { translate, type Resources } from '@tollgate/controller';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { WorkerPool } from '../src/process/workers/worker-pool.js';
import { SharedState } from '../src/process/workers/shared-state.js';
import { closedAfterEach, onFreePort, openTrace, send, simpleConfig, startGateway, startUpstream, untilEveryThreadServed, type RawResponse, type TraceStream } from './helpers.js';
import { heldLlm } from './support/held-llm.js';
import { backendRouteResources, GATEWAY, meta } from './support/backend-resources.js';
import { startStreamedProxy } from './support/streamed-proxy.js';

const cleanups = closedAfterEach();

interface Missing {
  readonly worker: number;
  readonly reason: string;
}

/** `n` Backends `b<i>` at `b<i>.views.invalid` (a name that never resolves), each the backend of HTTPRoute `r<i>` on path /n<i>. */
function namedBackends(port: number, n: number): Resources {
  const backends = Array.from({ length: n }, (_, i) => ({ apiVersion: 'tollgate.dev/v1alpha1', kind: 'Backend', metadata: meta(`b${i}`, 'edge'), spec: { hostname: `b${i}.views.invalid`, port: 80 } }));
  const base = backendRouteResources(port, backends[0] as Resources['backends'][number], { secrets: [], configMaps: [] });
  const httpRoutes = backends.map((_, i) => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: meta(`r${i}`, 'edge'),
    spec: { parentRefs: [{ name: 'public' }], rules: [{ matches: [{ path: { type: 'PathPrefix', value: `/n${i}` } }], backendRefs: [{ group: 'tollgate.dev', kind: 'Backend', name: `b${i}` }] }] },
  }));
  return { ...base, backends, httpRoutes } as Resources;
}

describe('admin views across worker threads', () => {
  it("/config_dump lists the names every thread resolved, the worker thread's among them", async () => {
    const streamed = await startStreamedProxy(GATEWAY, { workers: 2 });
    cleanups.push(streamed.close);
    const port = await onFreePort(async (port) => {
      await streamed.offer(translate(namedBackends(port, 40), { controllerName: 'tollgate.dev/gateway-controller' }).snapshots.get(GATEWAY)!);
      return port;
    });
    const admin = `http://${streamed.proxy.admin.address}`;
    // Each request is the first for its name: whichever thread takes it is the one that resolves it.
    const sent = await untilEveryThreadServed(admin, async (i) => expect((await send(`http://127.0.0.1:${port}/n${i}`, { headers: { connection: 'close' } })).status).toBe(503));
    const dump = (await (await fetch(`${admin}/config_dump`)).json()) as { dns: { names: { hostname: string; error: string | null }[] }; missingWorkers?: Missing[] };
    const names = dump.dns.names.map((n) => n.hostname).sort();
    expect(names).toEqual(Array.from({ length: sent }, (_, i) => `b${i}.views.invalid`).sort());
    expect(dump.dns.names.every((n) => n.error?.includes('.views.invalid'))).toBe(true);
    expect(dump.missingWorkers).toBeUndefined();
  });

  it("/backends counts every thread's calls to an endpoint", async () => {
    const up = await startUpstream();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'a', backends: [{ host: up.host }] }]), { workers: 2 });
    cleanups.push(() => up.close(), () => gw.close());
    const sent = await untilEveryThreadServed(gw.adminUrl, async () => expect((await send(`${gw.url}/a`, { headers: { connection: 'close' } })).status).toBe(200));
    const body = (await (await fetch(`${gw.adminUrl}/backends`)).json()) as { backends: { endpoints: { address: string; requests: number; inFlight: number; health: number }[] }[]; missingWorkers?: Missing[] };
    expect(body.backends.map((b) => b.endpoints)).toEqual([[expect.objectContaining({ address: up.host, requests: sent, inFlight: 0, health: 1 })]]);
    expect(body.missingWorkers).toBeUndefined();
    // config_dump's backends are the same entries.
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { backends: { endpoints: { requests: number }[] }[] };
    expect(dump.backends[0]!.endpoints[0]!.requests).toBe(sent);
  });

  it('/debug/tasks lists the requests in flight on every thread, each with its thread and an id no other has', async () => {
    const llm = await heldLlm();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'held', backends: [{ host: llm.upstream.host }] }]), { workers: 2 });
    // Released before the gateway drains, should an assertion fail with requests still held.
    cleanups.push(() => llm.upstream.close(), () => gw.close(), async () => llm.releaseAll());
    const answers: Promise<RawResponse>[] = [];
    const sent = await untilEveryThreadServed(gw.adminUrl, async () => {
      const arrived = llm.arrived;
      answers.push(send(`${gw.url}/v1/chat`, { method: 'POST', headers: { connection: 'close' }, body: '{}' }));
      // Held at the backend: in flight on the thread that took it.
      while (llm.arrived === arrived) await once(llm.events, 'arrived');
    });
    const tasks = (await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { requests: { name: string; worker: number; stage: string }[]; missingWorkers?: Missing[] };
    expect(tasks.requests).toHaveLength(sent);
    expect(new Set(tasks.requests.map((r) => r.name)).size).toBe(sent);
    expect(tasks.requests.every((r) => /^request [1-9][0-9]*$/.test(r.name) && r.stage === 'upstream')).toBe(true);
    expect(new Set(tasks.requests.map((r) => r.worker))).toEqual(new Set([0, 1]));
    expect(tasks.missingWorkers).toBeUndefined();
    llm.releaseAll();
    expect((await Promise.all(answers)).map((r) => r.status)).toEqual(Array(sent).fill(200));
  });

  it('/debug/tasks shows each trace session streaming from the thread that took its request', async () => {
    const llm = await heldLlm();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'held', backends: [{ host: llm.upstream.host }] }]), { workers: 2 });
    cleanups.push(() => llm.upstream.close(), () => gw.close(), async () => llm.releaseAll());
    const traces: TraceStream[] = [];
    const answers: Promise<RawResponse>[] = [];
    // One session per request, each matching its own request only.
    await untilEveryThreadServed(gw.adminUrl, async (i) => {
      const trace = await openTrace(gw.adminUrl, `?match=${encodeURIComponent(`request.headers["x-n"] == "${i}"`)}`);
      await trace.armed;
      traces.push(trace);
      const arrived = llm.arrived;
      answers.push(send(`${gw.url}/v1/chat`, { method: 'POST', headers: { connection: 'close', 'x-n': String(i) }, body: '{}' }));
      while (llm.arrived === arrived) await once(llm.events, 'arrived');
    });
    const tasks = (await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { requests: { worker: number; traced: number | null }[]; traceSessions: { name: string; state: string; worker?: number }[] };
    const bySession = tasks.traceSessions.map((t) => [t.name, t.state, t.worker]).sort();
    expect(bySession).toEqual(tasks.requests.map((r) => [`trace session ${r.traced}`, 'streaming', r.worker]).sort());
    expect(new Set(bySession.map(([, , worker]) => worker))).toEqual(new Set([0, 1]));
    llm.releaseAll();
    await Promise.all(answers);
    for (const t of traces) expect((await t.events).filter((e) => e.message.type === 'requestFinished')).toHaveLength(1);
  });

  it('a session a worker thread streams counts no more against maxTraceSessions than one streaming on the main thread', async () => {
    const llm = await heldLlm();
    const gw = await startGateway((port) => ({ config: { maxTraceSessions: 1 }, ...simpleConfig(port, [{ name: 'held', backends: [{ host: llm.upstream.host }] }]) }), { workers: 2 });
    cleanups.push(() => llm.upstream.close(), () => gw.close(), async () => llm.releaseAll());
    const traces: TraceStream[] = [];
    const arm = async (i: number) => {
      const trace = await openTrace(gw.adminUrl, `?match=${encodeURIComponent(`request.headers["x-n"] == "${i}"`)}`);
      expect(trace.res.statusCode).toBe(200);
      await trace.armed;
      traces.push(trace);
    };
    // Each session's request is held, so the session streams while the next one is armed.
    const sent = await untilEveryThreadServed(gw.adminUrl, async (i) => {
      await arm(i);
      const arrived = llm.arrived;
      void send(`${gw.url}/v1/chat`, { method: 'POST', headers: { connection: 'close', 'x-n': String(i) }, body: '{}' });
      while (llm.arrived === arrived) await once(llm.events, 'arrived');
    });
    // Every session streams (one on each thread at least): one more may wait.
    await arm(sent);
    llm.releaseAll();
    for (const t of traces.slice(0, -1)) expect((await t.events).filter((e) => e.message.type === 'requestFinished')).toHaveLength(1);
    traces.at(-1)!.res.destroy();
  });

  it('names a worker that does not give its part in time, and answers without it', async () => {
    // A worker thread that starts and drains but never answers a view.
    const script = new URL('./support/silent-worker.mjs', import.meta.url);
    const shared = SharedState.create(2, { maxBufferedRequestBytes: 1024, log: pino({ level: 'silent' }) } as Parameters<typeof SharedState.create>[1]);
    const pool = new WorkerPool({ threads: 1, settings: {}, shared: shared.buffers, logDirective: () => 'info', log: pino({ level: 'silent' }), registry: new Registry(), script, viewTimeoutMs: 100 });
    await pool.start();
    cleanups.push(() => pool.close());
    expect(await pool.view('dns')).toEqual({ parts: [], missing: [{ worker: 1, reason: 'worker 1 did not answer view within 0.1s' }] });
  });
});
