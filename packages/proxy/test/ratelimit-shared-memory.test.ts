// Local rate limits in shared mode (src/ratelimit/local/shared-memory.ts): a leader store on this
// thread (worker 0) and follower stores on real worker threads (./support/limit-worker.mjs) that
// adopt its layout, all checking the same budgets. The threads wait at a barrier (Atomics.wait on
// a shared start word) and are released at once, so their checks really race; every count below
// is what one thread alone would admit, whatever the interleaving. The clock is fixed: no
// window rolls during a test.
//
// The worker threads run the built JavaScript (Node runs no TypeScript in a worker): build it
// first, and after each change, with `npx tsc -b packages/proxy`.
import { existsSync, readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DEFAULT_LIMITS, type LocalRateLimitIR } from '@tollgate/api';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RequestFacts } from '../src/ratelimit/facts.js';
import type { LimitStatus } from '../src/ratelimit/headers.js';
import { keyBudgets, LimiterStore, LocalLimiter, type KeyBudget, type LocalCheck, type LocalHold } from '../src/ratelimit/local/limiter.js';
import { LeaderLimitMemory, type LimitLayout } from '../src/ratelimit/local/shared-memory.js';
import type { TokenWindow } from '../src/ratelimit/local/token-window.js';

/** The leader (this thread) and three followers. */
const WORKERS = 4;
const NOW = Date.UTC(2026, 0, 1, 12);
const MAX_KEYS = 64;
const SRC = new URL('../src/ratelimit/local/', import.meta.url);
const DIST = new URL('../dist/ratelimit/local/', import.meta.url);
const WORKER_SCRIPT = new URL('./support/limit-worker.mjs', import.meta.url);

/**
 * The worker threads import packages/proxy/dist: every module of these sources must be built.
 * (Whether it is current is tsc's to tell: \`npx tsc -b packages/proxy\` rebuilds what changed.)
 */
function assertBuilt(): void {
  for (const name of readdirSync(SRC)) {
    if (!name.endsWith('.ts')) continue;
    const at = `packages/proxy/dist/ratelimit/local/${name.replace(/\.ts$/, '.js')}`;
    if (!existsSync(new URL(name.replace(/\.ts$/, '.js'), DIST))) {
      throw new Error(`${at} is missing: run \`npx tsc -b packages/proxy\` first (worker threads run the built JavaScript, not the TypeScript sources)`);
    }
  }
}

interface Reply {
  readonly ok: boolean;
  readonly message?: string;
  readonly admitted?: Record<string, number>;
  readonly settled?: number;
}

/** A follower thread, answering each command in order. */
class Thread {
  readonly worker: Worker;
  readonly #inbox: Reply[] = [];
  readonly #waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void }[] = [];
  #failed: Error | null = null;

  constructor(readonly index: number) {
    this.worker = new Worker(WORKER_SCRIPT, { workerData: { worker: index, workers: WORKERS, now: NOW, maxKeys: MAX_KEYS } });
    this.worker.on('message', (m: Reply) => {
      const w = this.#waiting.shift();
      if (w) w.resolve(m);
      else this.#inbox.push(m);
    });
    const fail = (e: Error) => {
      this.#failed = e;
      for (const w of this.#waiting.splice(0)) w.reject(e);
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`worker ${index} exited (${code})`)));
  }

  /** The next answer. */
  next(): Promise<Reply> {
    const m = this.#inbox.shift();
    if (m) return Promise.resolve(m);
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  async call(msg: object): Promise<Reply> {
    this.worker.postMessage(msg);
    const r = await this.next();
    if (!r.ok) throw new Error(r.message);
    return r;
  }

  compile(layout: LimitLayout, scope: string, configs: readonly LocalRateLimitIR[]): Promise<Reply> {
    return this.call({ op: 'compile', layout, scope, configs });
  }
}

let threads: Thread[] = [];

function start(n = WORKERS - 1): Thread[] {
  threads = Array.from({ length: n }, (_, i) => new Thread(i + 1));
  return threads;
}

afterEach(async () => {
  await Promise.all(threads.map((t) => t.worker.terminate()));
  threads = [];
});

function leader() {
  const memory = new LeaderLimitMemory({ workers: WORKERS });
  const store = new LimiterStore(() => NOW, { maxKeys: MAX_KEYS, memory });
  return { memory, store };
}

/** Compiles and commits a route's limiter, as a config reload does. */
function compile(store: LimiterStore, scope: string, configs: readonly LocalRateLimitIR[]): LocalLimiter {
  const limiter = LocalLimiter.compile('route', scope, configs.map((config, index) => ({ index, config })), store, DEFAULT_LIMITS);
  store.commit();
  return limiter;
}

const factsOf = (key: string | null) => (): RequestFacts => ({ method: 'POST', path: '/', host: 'test', headers: key === null ? {} : { 'x-key': key }, sourceAddress: '127.0.0.1', model: null, consumer: null });

interface Race {
  readonly keys: readonly (string | null)[];
  readonly rounds: number;
  readonly reservation: number;
  /** What an admitted request does next: settled at once (with `usage`), refunded, or held. */
  readonly then: 'settle' | 'refund' | 'hold';
  readonly usage?: number | null;
}

/** This thread's share of a race (the same loop as the workers'). */
function checks(limiter: LocalLimiter, race: Race, holds: LocalHold[]): Record<string, number> {
  const admitted: Record<string, number> = {};
  for (let r = 0; r < race.rounds; r++) {
    for (const key of race.keys) {
      const v = limiter.check(race.reservation, factsOf(key));
      if (!v.allowed) continue;
      admitted[String(key)] = (admitted[String(key)] ?? 0) + 1;
      if (race.then === 'settle') v.hold.settle(race.usage ?? null);
      else if (race.then === 'refund') v.hold.refund();
      else holds.push(v.hold);
    }
  }
  return admitted;
}

/**
 * Every thread (and this one, when `limiter` is given) runs `race` at once; the admissions by
 * key, summed. Each follower gets the keys in its own order, so the threads meet on every key.
 */
async function race(on: readonly Thread[], limiter: LocalLimiter | null, r: Race, holds: LocalHold[] = []): Promise<Record<string, number>> {
  const startWord = new SharedArrayBuffer(4);
  for (const t of on) t.worker.postMessage({ op: 'race', start: startWord, ...r, keys: rotate(r.keys, t.index) });
  // Each answers once at the barrier, then with its result.
  for (const ready of await Promise.all(on.map((t) => t.next()))) if (!ready.ok) throw new Error(ready.message);
  const word = new Int32Array(startWord);
  Atomics.store(word, 0, 1);
  Atomics.notify(word, 0);
  const results = [limiter ? checks(limiter, r, holds) : {}];
  for (const done of await Promise.all(on.map((t) => t.next()))) {
    if (!done.ok) throw new Error(done.message);
    results.push(done.admitted ?? {});
  }
  const total: Record<string, number> = {};
  for (const a of results) for (const [k, n] of Object.entries(a)) total[k] = (total[k] ?? 0) + n;
  return total;
}

function rotate<T>(xs: readonly T[], by: number): T[] {
  return xs.map((_, i) => xs[(i + by) % xs.length]!);
}

/** The window of an unkeyed tokens entry. */
function windowOf(limiter: LocalLimiter, index: number): TokenWindow {
  const e = limiter.entries[index]!;
  if (e.kind !== 'tokens' || e.budget.keyed) throw new Error(`entry ${index} is not an unkeyed tokens entry`);
  return e.budget.state;
}

/** The budgets of the store's first keyed entry, by key (the overflow budget as "overflow"). */
function listed(store: LimiterStore): Record<string, KeyBudget> {
  const k = store.keyedEntries()[0]!;
  return Object.fromEntries([...keyBudgets(k, NOW)].map(([key, b]) => [key ?? 'overflow', b]));
}

const refusedBy = (v: LocalCheck) => (v.allowed ? null : v.refusedBy);

/** The first entry's x-ratelimit-* values after a check. */
function firstStatus(v: LocalCheck): LimitStatus {
  if (!('statuses' in v)) throw new Error(`refused unevaluated: ${v.problem}`);
  return v.statuses[0]!;
}

const requests = (n: number, extra: Partial<LocalRateLimitIR> = {}): LocalRateLimitIR => ({ kind: 'requests', requests: n, burst: 0, unit: 'Hours', ...extra }) as LocalRateLimitIR;
const tokens = (n: number, extra: Partial<LocalRateLimitIR> = {}): LocalRateLimitIR => ({ kind: 'tokens', tokens: n, unit: 'Hours', ...extra }) as LocalRateLimitIR;
const BY_KEY = { by: { type: 'Header', name: 'x-key' } } as const;

beforeAll(assertBuilt);

describe('local rate limits shared by worker threads', () => {
  it('an unkeyed limit of 5: 200 concurrent checks on 4 threads admit exactly 5', async () => {
    const { store, memory } = leader();
    const limiter = compile(store, 'r', [requests(5)]);
    await Promise.all(start().map((t) => t.compile(memory.layout(), 'r', [requests(5)])));

    const admitted = await race(threads, limiter, { keys: [null], rounds: 50, reservation: 0, then: 'settle' });
    expect(admitted).toEqual({ null: 5 });
    expect(refusedBy(limiter.check(0, factsOf(null)))).toBe('requests');
  });

  it('a keyed limit of 3: 10 key values checked on every thread, exactly 3 admitted per key', async () => {
    const { store, memory } = leader();
    const config = requests(3, BY_KEY);
    const limiter = compile(store, 'r', [config]);
    await Promise.all(start().map((t) => t.compile(memory.layout(), 'r', [config])));
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);

    const admitted = await race(threads, limiter, { keys, rounds: 10, reservation: 0, then: 'settle' });
    expect(admitted).toEqual(Object.fromEntries(keys.map((k) => [k, 3])));
    // GET /budgets reads the shared table: every key, each with its 3 requests used.
    const rows = listed(store);
    expect(Object.keys(rows).sort()).toEqual([...keys, 'overflow'].sort());
    for (const k of keys) expect(rows[k]).toMatchObject({ used: 3, remaining: 0, idle: false });
    expect(rows.overflow).toMatchObject({ used: 0, idle: true });
  });

  it('a tokens window: reservations admit no more than the budget covers; settle and release keep the totals', async () => {
    const { store, memory } = leader();
    const limiter = compile(store, 'r', [tokens(1000)]);
    await Promise.all(start().map((t) => t.compile(memory.layout(), 'r', [tokens(1000)])));
    const window = windowOf(limiter, 0);
    const holds: LocalHold[] = [];

    // Admitted while usage plus reservations is at or below the budget: 0, 100, ..., 1000.
    const held = await race(threads, limiter, { keys: [null], rounds: 20, reservation: 100, then: 'hold' }, holds);
    expect(held).toEqual({ null: 11 });
    expect(window.reserved(NOW)).toBe(1100);
    expect(window.used(NOW)).toBe(0);

    // Every thread settles what it holds: the reservations become the usage reported.
    const settled = await Promise.all(threads.map((t) => t.call({ op: 'settle', usage: 40 })));
    const mine = holds.splice(0);
    for (const h of mine) h.settle(40);
    expect(mine.length + settled.reduce((n, r) => n + (r.settled ?? 0), 0)).toBe(11);
    expect(window.used(NOW)).toBe(440);
    expect(window.reserved(NOW)).toBe(0);

    // 560 left: admitted at 440, 540, ..., 940.
    expect(await race(threads, limiter, { keys: [null], rounds: 20, reservation: 100, then: 'hold' }, holds)).toEqual({ null: 6 });
    expect(window.reserved(NOW)).toBe(600);
    // Released (not charged): the usage is unchanged, nothing is reserved.
    await Promise.all(threads.map((t) => t.call({ op: 'settle', usage: null })));
    for (const h of holds.splice(0)) h.settle(null);
    expect(window.reserved(NOW)).toBe(0);
    expect(window.used(NOW)).toBe(440);
    expect(window.idle(1000, NOW)).toBe(false);

    // Requests settled at once, as they complete: usage counts every admitted one.
    const done = await race(threads, limiter, { keys: [null], rounds: 20, reservation: 100, then: 'settle', usage: 10 });
    expect(window.used(NOW)).toBe(440 + 10 * (done.null ?? 0));
    expect(window.reserved(NOW)).toBe(0);
  });

  it('under contention: 32,000 checks on 4 threads take exactly the limit; no settlement or refund is lost', async () => {
    const { store, memory } = leader();
    const configs = [requests(12_000), tokens(1e9)];
    const limiter = compile(store, 'r', configs);
    await Promise.all(start().map((t) => t.compile(memory.layout(), 'r', configs)));

    expect(await race(threads, limiter, { keys: [null], rounds: 8000, reservation: 7, then: 'settle', usage: 3 })).toEqual({ null: 12_000 });
    const window = windowOf(limiter, 1);
    expect(window.used(NOW)).toBe(36_000);
    expect(window.reserved(NOW)).toBe(0);

    // Raised: every check admitted, then refunded (another limit refused it): nothing is counted.
    const raised = [requests(1e6), tokens(1e9)];
    const again = compile(store, 'r', raised);
    await Promise.all(threads.map((t) => t.compile(memory.layout(), 'r', raised)));
    expect(await race(threads, again, { keys: [null], rounds: 8000, reservation: 7, then: 'refund' })).toEqual({ null: 32_000 });
    expect(firstStatus(again.check(0, factsOf(null)))).toMatchObject({ remaining: 1e6 - 12_001 });
    expect(window.used(NOW)).toBe(36_000);
    expect(window.reserved(NOW)).toBe(0);
  });

  it("releaseWorker gives back a terminated worker's reservations and holds everywhere; request tokens stay taken", async () => {
    const { store, memory } = leader();
    const configs = [requests(100), tokens(1000), tokens(1000, BY_KEY)];
    const limiter = compile(store, 'r', configs);
    const [, , third] = start();
    await Promise.all(threads.map((t) => t.compile(memory.layout(), 'r', configs)));
    const holds: LocalHold[] = [];

    // Worker 3 holds 4 requests of 100 tokens on key a; this thread 2 of 50 on key b.
    expect(await race([third!], null, { keys: ['a'], rounds: 4, reservation: 100, then: 'hold' })).toEqual({ a: 4 });
    expect(checks(limiter, { keys: ['b'], rounds: 2, reservation: 50, then: 'hold' }, holds)).toEqual({ b: 2 });
    const window = windowOf(limiter, 1);
    expect(window.reserved(NOW)).toBe(500);
    expect(listed(store).a).toMatchObject({ reserved: 400, idle: false });

    await third!.worker.terminate();
    store.releaseWorker(3);
    expect(window.reserved(NOW)).toBe(100);
    expect(listed(store).a).toMatchObject({ reserved: 0, used: 0, idle: true });
    expect(listed(store).b).toMatchObject({ reserved: 100, idle: false });
    // The 6 admitted requests keep their request tokens.
    expect(firstStatus(limiter.check(0, factsOf('c')))).toMatchObject({ remaining: 93 });

    for (const h of holds) h.settle(10);
    expect(window.reserved(NOW)).toBe(0);
    expect(window.used(NOW)).toBe(20);
    expect(listed(store).b).toMatchObject({ used: 20, reserved: 0 });
  });

  it('a worker terminated while holding the lock: releaseWorker takes the lock back', async () => {
    const { store, memory } = leader();
    const limiter = compile(store, 'r', [tokens(1000)]);
    const [, second] = start();
    await Promise.all(threads.map((t) => t.compile(memory.layout(), 'r', [tokens(1000)])));
    expect(await race([second!], null, { keys: [null], rounds: 2, reservation: 100, then: 'hold' })).toEqual({ null: 2 });

    await second!.call({ op: 'lockForever' });
    await second!.worker.terminate();
    memory.releaseWorker(2);
    expect(windowOf(limiter, 0).reserved(NOW)).toBe(0);
    expect(limiter.check(100, factsOf(null)).allowed).toBe(true);
  });

  it('the layout follows config changes: a kept id keeps its state, a lowered limit applies to what was used, a removed id is dropped', async () => {
    const { store, memory } = leader();
    const before = [requests(5), tokens(1000)];
    compile(store, 'r', before);
    const first = store.layout();
    await Promise.all(start().map((t) => t.compile(first, 'r', before)));
    expect(await race(threads, null, { keys: [null], rounds: 1, reservation: 100, then: 'settle', usage: 10 })).toEqual({ null: 3 });

    // The requests entry, lowered to 2: the same id (amounts are not part of it), the same buffer.
    const after = [requests(2)];
    const limiter = compile(store, 'r', after);
    const second = memory.layout();
    expect(second.entries.map((e) => e.id)).toEqual([first.entries[0]!.id]);
    expect(second.entries[0]!.serial).toBe(first.entries[0]!.serial);
    await Promise.all(threads.map((t) => t.compile(second, 'r', after)));
    expect(await race(threads, limiter, { keys: [null], rounds: 5, reservation: 0, then: 'settle' })).toEqual({});
    expect(firstStatus(limiter.check(0, factsOf(null)))).toMatchObject({ limit: '2', remaining: 0 });

    // Raised to 10: 7 more, whatever thread asks.
    const raised = [requests(10)];
    const again = compile(store, 'r', raised);
    await Promise.all(threads.map((t) => t.compile(memory.layout(), 'r', raised)));
    expect(await race(threads, again, { keys: [null], rounds: 5, reservation: 0, then: 'settle' })).toEqual({ null: 7 });

    // The tokens entry was dropped at commit: a follower asked for it throws, naming it.
    await expect(threads[0]!.compile(memory.layout(), 'r', before)).rejects.toThrow(/route:r#1:tokens:Hours:null/);
  });

  it('a store says which memory it has when asked for what only another can do', () => {
    const local = new LimiterStore(() => NOW, { maxKeys: MAX_KEYS });
    expect(() => local.layout()).toThrow("layout(): this limiter store's memory is local; only the leader's (worker 0) makes and lists buffers");
    expect(() => leader().store.adopt({ workers: WORKERS, lock: new SharedArrayBuffer(4), entries: [] })).toThrow("adopt(): this limiter store's memory is a leader's; only a follower's adopts a layout");
    expect(() => local.releaseWorker(1)).toThrow("releaseWorker(): this limiter store's memory is local; no other worker shares it");
  });

  it('a follower asked for an id its layout lacks throws, naming the id', async () => {
    const { store, memory } = leader();
    compile(store, 'r', [requests(5)]);
    start(1);
    await expect(threads[0]!.compile(memory.layout(), 'other', [requests(5)])).rejects.toThrow(
      'shared limit memory of worker 1: the adopted layout has no state for limit route:other#0:requests:Hours:null',
    );
  });
});
