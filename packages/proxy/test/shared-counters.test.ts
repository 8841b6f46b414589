// The counters worker threads share (SharedArrayBuffer + Atomics), exercised from real
// worker_threads that wait at a barrier and then race: the buffered-bytes budget
// (SharedBodyBudget) never goes beyond its max and its total is exact after give-backs; the
// connection table (ConnectionSlots) gives each bind one row and caps its connections across the
// threads, over real sockets on one port (reusePort); the bytes and connections of a thread
// terminated while holding them come back with releaseWorker. A data-plane server (HTTP and
// HTTPS) given the table counts its connections there; a runtime given the shared budget
// reports it.
//
// The threads run the built proxy (packages/proxy/dist): Node does not run the project's
// TypeScript sources in a worker thread. `npx tsc -b packages/proxy` builds it.
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, createSecureContext } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { freePort, issueTestCertificate } from '@tollgate/testkit';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SharedBodyBudget } from '../src/pipeline/shared-body-budget.js';
import { ConnectionSlots } from '../src/server/connection-slots.js';
import { DataPlaneServer, type DataPlaneContext } from '../src/server/data-plane.js';
import { DEFAULT_CLIENT_TIMEOUTS, ProxyRuntime } from '../src/server/runtime.js';
import type { BindTls } from '../src/routing/tls-contexts.js';

const DIST = new URL('../dist/', import.meta.url);
const SCRIPT = new URL('./support/shared-counters-worker.mjs', import.meta.url);

beforeAll(() => {
  for (const file of ['pipeline/shared-body-budget', 'server/connection-slots']) {
    const built = fileURLToPath(new URL(`${file}.js`, DIST));
    const source = fileURLToPath(new URL(`../src/${file}.ts`, import.meta.url));
    if (!existsSync(built)) throw new Error(`${built} is missing: these tests' worker threads run the built proxy; run \`npx tsc -b packages/proxy\` first`);
    if (statSync(built).mtimeMs < statSync(source).mtimeMs) throw new Error(`${built} is older than ${source}: run \`npx tsc -b packages/proxy\` again`);
  }
});

type Message = Record<string, number | number[]>;

/** A worker thread running one scenario of support/shared-counters-worker.mjs; its messages in order. */
interface Thread {
  readonly worker: Worker;
  readonly index: number;
  /** The next message not taken yet. */
  next(): Promise<Message>;
}

const threads: Thread[] = [];
afterEach(async () => {
  await Promise.all(threads.splice(0).map((t) => t.worker.terminate()));
});

function thread(scenario: string, index: number, buffer: SharedArrayBuffer, start: SharedArrayBuffer, params: Record<string, unknown>): Thread {
  const worker = new Worker(SCRIPT, { workerData: { scenario, dist: DIST.href, buffer, worker: index, start, params } });
  const seen: Message[] = [];
  const waiting: { resolve: (m: Message) => void; reject: (e: Error) => void }[] = [];
  let failure: Error | null = null;
  worker.on('message', (m: Message) => (waiting.length ? waiting.shift()!.resolve(m) : seen.push(m)));
  worker.on('error', (err: Error) => {
    failure = err;
    for (const w of waiting.splice(0)) w.reject(err);
  });
  const t: Thread = {
    worker,
    index,
    next: () => (seen.length ? Promise.resolve(seen.shift()!) : failure ? Promise.reject(failure) : new Promise((resolve, reject) => waiting.push({ resolve, reject }))),
  };
  threads.push(t);
  return t;
}

/** Starts `n` threads (worker indexes 1..n) and lets them all go at once once each is waiting at the barrier. */
async function race(n: number, scenario: string, buffer: SharedArrayBuffer, params: Record<string, unknown>): Promise<Thread[]> {
  const start = new SharedArrayBuffer(4);
  const started = Array.from({ length: n }, (_, i) => thread(scenario, i + 1, buffer, start, params));
  for (const t of started) expect(await t.next()).toEqual({ ready: t.index });
  const go = new Int32Array(start);
  Atomics.store(go, 0, 1);
  Atomics.notify(go, 0);
  return started;
}

async function terminated(t: Thread): Promise<void> {
  await t.worker.terminate();
  threads.splice(threads.indexOf(t), 1);
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

describe('SharedBodyBudget', () => {
  it('behaves as the local budget in one thread: a take that does not fit takes nothing', () => {
    const budget = SharedBodyBudget.create(10, 1);
    expect([budget.take(6), budget.take(5), budget.used, budget.take(4), budget.used]).toEqual([true, false, 6, true, 10]);
    budget.giveBack(10);
    expect([budget.used, budget.heldBy(0), budget.max]).toEqual([0, 0, 10]);
    // Counts past 2^32 (config.maxBufferedRequestBytes may be 16 GiB).
    const big = SharedBodyBudget.create(17_179_869_184, 1);
    expect([big.take(2 ** 33), big.take(2 ** 33), big.take(1), big.used]).toEqual([true, true, false, 2 ** 34]);
  });

  it('refuses a worker index out of range and a buffer it did not make, saying so', () => {
    const budget = SharedBodyBudget.create(10, 2);
    expect(() => new SharedBodyBudget(budget.buffer, 2)).toThrow('worker 2 is not one of the budget\'s 2 workers (0 to 1)');
    expect(() => new SharedBodyBudget(new SharedArrayBuffer(64), 0)).toThrow('the buffer is not a shared body budget: SharedBodyBudget.create() makes one');
  });

  it('4 threads taking 7 bytes at a time until refused take all that fits between them, and each column holds its own', async () => {
    // Large enough that the fill outlasts a scheduler slice: the threads take turns and run at once.
    const max = 10_000_019;
    const budget = SharedBodyBudget.create(max, 5);
    const racers = await race(4, 'budgetFill', budget.buffer, { chunk: 7 });
    const reports = await Promise.all(racers.map((t) => t.next()));
    const taken = reports.map((r) => r.taken as number);
    // The room only shrinks, by 7 at a time: once every thread is refused, less than 7 is left.
    expect(sum(taken)).toBe(max - (max % 7));
    expect(budget.used).toBe(max - (max % 7));
    expect(reports.map((r) => r.over)).toEqual([0, 0, 0, 0]);
    expect(racers.map((t) => budget.heldBy(t.index))).toEqual(taken);
    console.log(`budget fill: bytes taken by each thread ${taken.join(', ')}`);
    for (const t of racers) t.worker.postMessage('give back');
    await Promise.all(racers.map((t) => t.next()));
    expect([budget.used, ...racers.map((t) => budget.heldBy(t.index))]).toEqual([0, 0, 0, 0, 0]);
  });

  it('4 threads taking and giving back chunks of mixed sizes never see the total above max; it is exact after, and 0 after the give-backs', async () => {
    const max = 64 * 1024;
    const budget = SharedBodyBudget.create(max, 5);
    const racers = await race(4, 'budgetChurn', budget.buffer, { rounds: 400_000, maxChunk: 4096 });
    const reports = await Promise.all(racers.map((t) => t.next()));
    expect(reports.map((r) => r.over)).toEqual([0, 0, 0, 0]);
    // Each thread takes more than it gives back: alone it would pass max, so the budget refused some.
    expect(sum(reports.map((r) => r.refused as number))).toBeGreaterThan(0);
    const holding = reports.map((r) => r.holding as number);
    expect(budget.used).toBe(sum(holding));
    expect(budget.used).toBeLessThanOrEqual(max);
    expect(racers.map((t) => budget.heldBy(t.index))).toEqual(holding);
    for (const t of racers) t.worker.postMessage('give back');
    await Promise.all(racers.map((t) => t.next()));
    expect(budget.used).toBe(0);
  });

  it('releaseWorker gives back the bytes of a thread terminated while holding them, and only those', async () => {
    const budget = SharedBodyBudget.create(1000, 3);
    const start = new SharedArrayBuffer(4);
    const one = thread('budgetHold', 1, budget.buffer, start, { bytes: 300 });
    const two = thread('budgetHold', 2, budget.buffer, start, { bytes: 200 });
    expect([await one.next(), await two.next()]).toEqual([{ holding: 300 }, { holding: 200 }]);
    expect(budget.take(100)).toBe(true);
    await terminated(one);
    // Its requests never end: without releaseWorker its bytes would stay taken.
    expect(budget.used).toBe(600);
    expect(budget.releaseWorker(1)).toBe(300);
    expect([budget.used, budget.heldBy(1), budget.heldBy(2), budget.heldBy(0)]).toEqual([300, 0, 200, 100]);
    expect(budget.releaseWorker(1)).toBe(0);
    expect(budget.take(700)).toBe(true);
    expect(budget.take(1)).toBe(false);
  });
});

describe('ConnectionSlots', () => {
  it('holds a fixed number of binds: a key beyond them, or too long, is refused naming the bound', () => {
    const slots = ConnectionSlots.create(1, 2);
    expect([slots.slot('10.0.0.1:80'), slots.slot('10.0.0.2:80'), slots.slot('10.0.0.1:80')]).toEqual([0, 1, 0]);
    expect(() => slots.slot('10.0.0.3:80')).toThrow('bind 10.0.0.3:80: the connection table the worker threads share is full (2 binds, the most it holds); use fewer distinct binds (address:port)');
    expect(() => slots.slot(`${'a'.repeat(130)}:80`)).toThrow(/its key is 133 bytes; the connection table the worker threads share keys binds of at most 124/);
    expect(slots.keys()).toEqual(['10.0.0.1:80', '10.0.0.2:80']);
    expect(() => new ConnectionSlots(new SharedArrayBuffer(1024), 0)).toThrow('the buffer is not a shared connection table: ConnectionSlots.create() makes one');
  });

  it('4 threads allocating the same 10 binds at once get one row each, the same in every thread; each bind opens exactly its limit between them', async () => {
    const slots = ConnectionSlots.create(5);
    const keys = Array.from({ length: 10 }, (_, i) => `10.0.0.${i}:8080`);
    // A limit far beyond any real one, so the threads' loops overlap (as in the budget fill).
    const limit = 100_000;
    const racers = await race(4, 'slotsRace', slots.buffer, { keys, limit });
    const reports = await Promise.all(racers.map((t) => t.next()));
    console.log(`connections opened by each thread on the first bind: ${reports.map((r) => (r.opened as number[])[0]).join(', ')}`);
    const rows = reports[0]!.rows as number[];
    for (const r of reports) expect(r.rows).toEqual(rows);
    expect([...rows].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(slots.keys().sort()).toEqual([...keys].sort());
    keys.forEach((key, i) => {
      expect(sum(reports.map((r) => (r.opened as number[])[i]!)), key).toBe(limit);
      expect(slots.open(key)).toBe(limit);
    });
    // The thread terminated holding its connections: releaseWorker closes its share of each bind.
    const [first, ...others] = racers;
    const itsShare = reports[0]!.opened as number[];
    await terminated(first!);
    expect(slots.releaseWorker(first!.index)).toBe(sum(itsShare));
    keys.forEach((key, i) => expect(slots.open(key)).toBe(limit - itsShare[i]!));
    for (const t of others) t.worker.postMessage('release');
    await Promise.all(others.map((t) => t.next()));
    expect(keys.map((key) => slots.open(key))).toEqual(keys.map(() => 0));
    expect([0, 1, 2, 3, 4].map((w) => slots.heldBy(w))).toEqual([0, 0, 0, 0, 0]);
  });
});

/** A client connection; `outcome` is "in" once the server kept it (it writes "in"), "closed" if it closed first. */
async function client(port: number): Promise<{ socket: Socket; outcome: Promise<'in' | 'closed'> }> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const outcome = new Promise<'in' | 'closed'>((resolve) => {
    socket.once('data', () => resolve('in'));
    socket.once('close', () => resolve('closed'));
  });
  await once(socket, 'connect');
  return { socket, outcome };
}

describe('the connection cap across threads listening on one port', () => {
  it('keeps exactly the limit open across 3 threads, closes the others at once, and takes new ones as those close', async () => {
    const limit = 4;
    const slots = ConnectionSlots.create(4);
    const key = '127.0.0.1:shared';
    const start = new SharedArrayBuffer(4);
    const first = thread('slotsServe', 1, slots.buffer, start, { port: 0, key, limit });
    const { listening: port } = await first.next();
    const servers = [first, thread('slotsServe', 2, slots.buffer, start, { port, key, limit }), thread('slotsServe', 3, slots.buffer, start, { port, key, limit })];
    for (const t of servers.slice(1)) expect(await t.next()).toEqual({ listening: port });

    // What the threads report of each connection: kept, or refused (where the proxy counts
    // tollgate_client_refusals_total{reason="connection_limit"}).
    const events = { accepted: 0, refused: 0 };
    for (const t of servers) t.worker.on('message', (m: Message) => ('accepted' in m ? events.accepted++ : 'refused' in m && events.refused++));
    const clients = await Promise.all(Array.from({ length: 12 }, () => client(port as number)));
    const outcomes = await Promise.all(clients.map((c) => c.outcome));
    expect(outcomes.filter((o) => o === 'in')).toHaveLength(limit);
    expect(outcomes.filter((o) => o === 'closed')).toHaveLength(12 - limit);
    await expect.poll(() => ({ ...events })).toEqual({ accepted: limit, refused: 12 - limit });
    expect(slots.open(key)).toBe(limit);
    console.log(`connections kept by each thread: ${servers.map((t) => slots.heldBy(t.index)).join(', ')}`);

    const kept = clients.filter((_, i) => outcomes[i] === 'in');
    kept.pop()!.socket.destroy();
    await expect.poll(() => slots.open(key)).toBe(limit - 1);
    const again = await client(port as number);
    expect(await again.outcome).toBe('in');
    kept.push(again);

    // A thread terminated with connections open: its clients are cut, its count stays until releaseWorker.
    const holder = servers.find((t) => slots.heldBy(t.index) > 0)!;
    const held = slots.heldBy(holder.index);
    await terminated(holder);
    expect(slots.open(key)).toBe(limit);
    expect(slots.releaseWorker(holder.index)).toBe(held);
    expect(slots.open(key)).toBe(limit - held);
    for (const c of kept) c.socket.destroy();
  });
});

/** An HTTPS bind's certificates as the runtime compiles them: one listener, no SNI names, no client certificates. */
function bindTls(): BindTls {
  const { cert, key } = issueTestCertificate({ commonName: 'localhost', names: ['localhost', '127.0.0.1'] });
  const fallback = createSecureContext({ cert, key });
  return {
    byListener: new Map([['main', fallback]]),
    bySni: { first: () => undefined },
    fallback,
    fallbackListener: 'main',
    fallbackCertificates: [{ certificate: cert, key: { reveal: () => key } }],
    validation: new Map(),
    requestCert: false,
  } as unknown as BindTls;
}

/**
 * A client that sends a request with a method the proxy does not serve: Fastify answers it 404,
 * which shows the connection went on to the HTTP server (and lets the client's close end it at
 * once: before its first request, a connection the client half-closes stays open until the
 * first-bytes timeout, counted, as under server.maxConnections).
 */
async function answered(port: number, https: boolean): Promise<{ socket: Socket; answer: string }> {
  const socket = https ? tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false }) : connect(port, '127.0.0.1');
  await once(socket, https ? 'secureConnect' : 'connect');
  socket.write('PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n');
  const [answer] = (await once(socket, 'data')) as [Buffer];
  return { socket, answer: answer.toString('latin1') };
}

describe('a data-plane server given the shared table', () => {
  it.each([
    ['HTTP', false],
    ['HTTPS', true],
  ])('%s: counts its connections in the table: the room other threads hold is not its own, and comes back when a dead one is released', async (_, https) => {
    const port = await freePort();
    const key = `127.0.0.1:${port}`;
    const slots = ConnectionSlots.create(2);
    // Worker 1, here only its view of the table: two connections of its own open on the bind.
    const other = new ConnectionSlots(slots.buffer, 1);
    expect([other.acquire(other.slot(key), 3), other.acquire(other.slot(key), 3)]).toEqual([true, true]);
    const refusals: string[] = [];
    // What the server reads of its context when it is built and accepts connections; no request is proxied here.
    const ctx = {
      clientTimeouts: DEFAULT_CLIENT_TIMEOUTS,
      log: pino({ level: 'silent' }),
      metrics: { countRefusal: (reason: string) => refusals.push(reason) },
      upgrades: { closeBind: () => undefined },
      maxConnectionsPerBind: 3,
      connectionSlots: slots,
    } as unknown as DataPlaneContext;
    const server = new DataPlaneServer(port, '127.0.0.1', ctx, https ? bindTls() : null);
    await server.listen(['main']);
    try {
      const kept = await answered(port, https);
      expect(kept.answer).toMatch(/^HTTP\/1\.1 404/);
      expect(slots.open(key)).toBe(3);
      // Closed as soon as accepted, before any byte (of a TLS handshake too).
      const refused = await client(port);
      expect(await refused.outcome).toBe('closed');
      expect(refusals).toEqual(['connection_limit']);
      // Worker 1 died holding its two: released, they are room for this server's clients.
      expect(slots.releaseWorker(1)).toBe(2);
      const more = await Promise.all([answered(port, https), answered(port, https)]);
      for (const c of more) expect(c.answer).toMatch(/^HTTP\/1\.1 404/);
      expect(slots.open(key)).toBe(3);
      for (const c of [kept, ...more]) c.socket.destroy();
      await expect.poll(() => slots.open(key)).toBe(0);
      expect(refusals).toEqual(['connection_limit']);
    } finally {
      await server.close({ deadlineMs: 1000, idleMs: 0 });
    }
  });
});

describe('a runtime given the shared budget', () => {
  it('states its max as the bound in force and gauges the bytes every thread holds', async () => {
    const budget = SharedBodyBudget.create(4096, 2);
    const runtime = new ProxyRuntime({ connectTimeoutMs: 1000, backendRequestTimeoutMs: 1000, drainTimeoutMs: 100, drainIdleMs: 0, log: pino({ level: 'silent' }), maxBufferedRequestBytes: 1024, bodyBudget: budget });
    try {
      expect(new SharedBodyBudget(budget.buffer, 1).take(1000)).toBe(true);
      expect(runtime.clientBounds.maxBufferedRequestBytes).toBe(4096);
      expect(await runtime.metrics.registry.metrics()).toMatch(/^tollgate_buffered_request_bytes 1000$/m);
    } finally {
      await runtime.close();
    }
  });
});
