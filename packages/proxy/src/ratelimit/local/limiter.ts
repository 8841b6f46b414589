// The local limits of one attachment point (a listener's gateway-level policy, or a route's).
// A check is synchronous: every tokens window must be within budget and every request bucket
// must have a token; only then are the request tokens taken and the token reservations made,
// so a refused request consumes nothing and concurrent requests can never be admitted past a
// bucket's capacity. What an admitted request took is held in a `LocalHold` until the request
// ends: refunded when another limit refuses it, settled with its usage when it completes.
//
// A keyed entry (`by`) keeps one bucket or window per key value (./keyed-table.ts): the check
// first reads the request's key for it, then decides on that key's budget exactly as above,
// under that key's limit (its override, else the entry's amount: ./key-limits.ts).
//
// The state (buckets, windows, tables) is kept across configs by what identifies the entry
// (level, scope, index, kind, unit, key), not by its amounts: the limits are the config's and
// given to each check, so a new amount or override applies to what was used in the window.
//
// The state lives in the store's memory (./limit-memory.ts): this thread's, or shared by the
// proxy's worker threads. A check, and a hold's refund, settle and copy, run under the memory's
// lock, so a check of several budgets is all-or-nothing across threads too; the request's key
// values are read before it is taken (a CEL key costs more than the rest of the check).
import { bindRequest, readsOf, type EvaluationLimits, type InputName, type LocalRateLimitIR } from '@tollgate/api';
import type { Clock } from '../clock.js';
import type { RequestFacts } from '../facts.js';
import type { LimitStatus } from '../headers.js';
import { compileKey, keyValue, type CompiledKey } from '../key.js';
import { KeyLimits } from './key-limits.js';
import { unitMs, windowOrigin, type KeyState, type KeyTable } from './keyed-table.js';
import { BUCKET, underLock, WINDOW, type LimitMemory, type Lock, type StateType } from './limit-memory.js';
import { LocalLimitMemory } from './local-memory.js';
import { FollowerLimitMemory, LeaderLimitMemory, SharedLimitMemory, type LimitLayout } from './shared-memory.js';
import type { BucketLimit, RequestBucket } from './request-bucket.js';
import type { TokenWindow } from './token-window.js';

export type LimitLevel = 'gateway' | 'route';

/** One budget for every request, under one limit; or one per key value, each under its key's limit. */
type Budget<L, S extends KeyState<L>> =
  | { readonly keyed: false; readonly state: S; readonly limit: L }
  | { readonly keyed: true; readonly key: CompiledKey; readonly table: KeyTable<L, S>; readonly limits: KeyLimits<L> };

/** A budget a request meets, with the limit it has for this request. */
interface Met<L, S> {
  readonly state: S;
  readonly limit: L;
}
type MetBucket = Met<BucketLimit, RequestBucket>;
type MetWindow = Met<number, TokenWindow>;

/** `policy`: the value of x-ratelimit-policy when this entry is the tightest. */
export type LocalEntry =
  | { readonly kind: 'requests'; readonly config: LocalRateLimitIR; readonly budget: Budget<BucketLimit, RequestBucket>; readonly policy: string }
  | { readonly kind: 'tokens'; readonly config: LocalRateLimitIR; readonly budget: Budget<number, TokenWindow>; readonly policy: string };

export type LocalCheck =
  | { readonly allowed: true; readonly hold: LocalHold; readonly statuses: LimitStatus[] }
  /** The kind of entry that refused; the statuses of the budgets the request met. */
  | { readonly allowed: false; readonly refusedBy: LocalEntry['kind']; readonly statuses: LimitStatus[] }
  /** An input a key expression reads is over its declared bound: refused unevaluated (431). */
  | { readonly allowed: false; readonly refusedBy: 'input'; readonly input: InputName; readonly problem: string };

/**
 * What one admitted request holds in one local limiter: a token of each request bucket and a
 * reservation in each tokens window. `Admissions` ends it exactly once: `refund` (the gateway
 * refused the request after all: nothing is counted), or `settle` (the request went upstream:
 * it keeps its request tokens, and its reservations become its usage, or vanish when nothing
 * is charged).
 */
export interface LocalHold {
  refund(): void;
  /** `tokens`: the usage to charge, or null when the response is not charged (not 2xx, failed). */
  settle(tokens: number | null): void;
  /**
   * A hold for a copy of the request (a mirror): the same token reservation again in each
   * window, no request token (the copy was not admitted on its own). Settled by the copy.
   */
  copy(): LocalHold;
}

/** What a copy holds in a limiter without tokens entries: nothing. */
const NOTHING_HELD: LocalHold = {
  refund() {},
  settle() {},
  copy: () => NOTHING_HELD,
};

/** The hold of an unkeyed limiter without tokens entries: no per-request state, one per limiter. */
class RequestsHold implements LocalHold {
  constructor(
    readonly buckets: readonly MetBucket[],
    private readonly clock: Clock,
    /** The memory's lock; null when no other thread reads it. */
    private readonly lock: Lock | null,
  ) {}

  refund(): void {
    if (this.lock === null) this.#refund();
    else underLock(this.lock, () => this.#refund());
  }

  #refund(): void {
    const now = this.clock();
    for (const b of this.buckets) b.state.giveBack(b.limit, now);
  }

  settle(): void {}

  copy(): LocalHold {
    return NOTHING_HELD;
  }
}

/** The hold of a request on the budgets it met: its request tokens, its reservations and the windows they are in. */
class BudgetsHold implements LocalHold {
  constructor(
    private readonly buckets: readonly MetBucket[],
    private readonly windows: readonly TokenWindow[],
    private readonly amount: number,
    /** Per window, the start of the window the reservation was made in. */
    private readonly reservedIn: readonly number[],
    private readonly clock: Clock,
    /** The memory's lock; null when no other thread reads it. */
    private readonly lock: Lock | null,
  ) {}

  // Each under the lock, when there is one.
  refund(): void {
    if (this.lock === null) this.#refund();
    else underLock(this.lock, () => this.#refund());
  }

  settle(tokens: number | null): void {
    if (this.lock === null || this.windows.length === 0) this.#settle(tokens);
    else underLock(this.lock, () => this.#settle(tokens));
  }

  copy(): LocalHold {
    if (this.windows.length === 0) return NOTHING_HELD;
    return this.lock === null ? this.#copy() : underLock(this.lock, () => this.#copy());
  }

  #refund(): void {
    const now = this.clock();
    for (const b of this.buckets) b.state.giveBack(b.limit, now);
    for (let i = 0; i < this.windows.length; i++) this.windows[i]!.release(this.amount, this.reservedIn[i]!, now);
  }

  #settle(tokens: number | null): void {
    const now = this.clock();
    for (let i = 0; i < this.windows.length; i++) {
      if (tokens === null) this.windows[i]!.release(this.amount, this.reservedIn[i]!, now);
      else this.windows[i]!.settle(this.amount, this.reservedIn[i]!, tokens, now);
    }
  }

  #copy(): LocalHold {
    const now = this.clock();
    return new BudgetsHold(
      [],
      this.windows,
      this.amount,
      this.windows.map((w) => w.reserve(this.amount, now)),
      this.clock,
      this.lock,
    );
  }
}

export interface LimiterStoreOptions {
  /** config.maxRateLimitKeys: the key values a keyed entry keeps a budget for. */
  readonly maxKeys: number;
  /** A request of a keyed entry was given the overflow budget (metrics, a throttled warn). */
  readonly overflowed?: (entry: { readonly level: LimitLevel; readonly scope: string; readonly index: number; readonly kind: LocalEntry['kind'] }) => void;
  /**
   * Where the state lives (./limit-memory.ts): this thread's (a LocalLimitMemory) by default, or
   * a shared memory of worker threads (a LeaderLimitMemory or a FollowerLimitMemory).
   */
  readonly memory?: LimitMemory;
}

/** A keyed entry of the config in force, where it is: what GET /budgets lists. */
export interface KeyedEntry {
  readonly level: LimitLevel;
  readonly scope: string;
  readonly index: number;
  readonly entry: LocalEntry & { readonly budget: { readonly keyed: true } };
  /** The lock of the memory its table is in (null: no other thread reads it): listing reads it under the lock. */
  readonly lock: Lock | null;
}

/** The limits of a requests entry: its amount, and each override's. */
function bucketLimits(c: Extract<LocalRateLimitIR, { kind: 'requests' }>): KeyLimits<BucketLimit> {
  return new KeyLimits({ requests: c.requests, burst: c.burst }, (c.overrides ?? []).map((o) => [o.key, { requests: o.requests, burst: o.burst }] as const));
}

function tokenLimits(c: Extract<LocalRateLimitIR, { kind: 'tokens' }>): KeyLimits<number> {
  return new KeyLimits(c.tokens, (c.overrides ?? []).map((o) => [o.key, o.tokens] as const));
}

/** What x-ratelimit-policy calls an entry: its name or its place, and the type of its key (never a key value). */
function policyName(level: LimitLevel, index: number, config: LocalRateLimitIR): string {
  const name = config.name ?? `${level}.local[${index}]`;
  return config.by ? `${name};by=${config.by.type}` : name;
}

/**
 * Keeps limiter state across config reloads. An entry's counters are identified by level,
 * scope, index, kind, unit and key: an entry whose amount or overrides changed keeps them
 * (every key's, for a keyed one), and its new limits apply to what was used in the window.
 */
export class LimiterStore {
  /** Where the state is kept: this thread's, or shared by worker threads (a leader's or a follower's). */
  readonly memory: LimitMemory;
  /** The keyed entries of the config in force, and of the one being compiled (read-only listing). */
  #liveKeyed: readonly KeyedEntry[] = [];
  /** By table: listeners sharing a Gateway-wide policy compile the same entry once each, on one table. */
  #nextKeyed = new Map<object, KeyedEntry>();
  constructor(
    readonly clock: Clock,
    readonly options: LimiterStoreOptions,
  ) {
    this.memory = options.memory ?? new LocalLimitMemory();
  }

  entry(level: LimitLevel, scope: string, index: number, config: LocalRateLimitIR, key: CompiledKey | null): LocalEntry {
    // Not the amounts: they are parameters of each check (see the class comment).
    const id = `${level}:${scope}#${index}:${config.kind}:${config.unit}:${JSON.stringify(config.by ?? null)}`;
    const overflowed = () => this.options.overflowed?.({ level, scope, index, kind: config.kind });
    const policy = policyName(level, index, config);
    let made: LocalEntry;
    if (config.kind === 'requests') {
      const budget = this.#budget(id, BUCKET, config, key, bucketLimits(config), overflowed);
      made = { kind: 'requests', config, budget, policy };
    } else {
      const budget = this.#budget(id, WINDOW, config, key, tokenLimits(config), overflowed);
      made = { kind: 'tokens', config, budget, policy };
    }
    if (isKeyed(made)) this.#nextKeyed.set(made.budget.table, { level, scope, index, entry: made, lock: this.memory.lock });
    return made;
  }

  /** The keyed entries of the config in force (GET /budgets reads their tables; nothing here changes them). */
  keyedEntries(): readonly KeyedEntry[] {
    return this.#liveKeyed;
  }

  /** The entry's budget as the live config (or this one, for a repeated entry) left it, else a new one (the memory's). */
  #budget<L, S extends KeyState<L>>(id: string, type: StateType<S>, config: LocalRateLimitIR, key: CompiledKey | null, limits: KeyLimits<L>, overflowed: () => void): Budget<L, S> {
    const spec = { id, type, unit: config.unit, unitMs: unitMs(config.unit), clock: this.clock, origin: windowOrigin(config.unit, this.clock()) };
    return key
      ? { keyed: true, key, limits, table: this.memory.table<L, S>({ ...spec, maxKeys: this.options.maxKeys, overflowed }) }
      : { keyed: false, limit: limits.fallback, state: this.memory.state(spec) };
  }

  /** Called once a new config is in place: state no entry of it uses is dropped. */
  commit(): void {
    this.memory.commit();
    this.#liveKeyed = [...this.#nextKeyed.values()];
    this.#nextKeyed = new Map();
  }

  /** Called when a new config is refused: forget what it prepared. */
  discard(): void {
    this.memory.discard();
    this.#nextKeyed = new Map();
  }

  // Shared mode, for the thread plumbing (./shared-memory.ts): each throws, saying why, on a
  // store whose memory cannot do it.

  /** The leader's buffers of the config in force (after commit): posted to the followers with the snapshot. */
  layout(): LimitLayout {
    if (!(this.memory instanceof LeaderLimitMemory)) throw new Error(`layout(): this limiter store's memory is ${this.#memoryName()}; only the leader's (worker 0) makes and lists buffers`);
    return this.memory.layout();
  }

  /** A follower adopts the leader's layout before compiling the snapshot it came with. */
  adopt(layout: LimitLayout): void {
    if (!(this.memory instanceof FollowerLimitMemory)) throw new Error(`adopt(): this limiter store's memory is ${this.#memoryName()}; only a follower's adopts a layout`);
    this.memory.adopt(layout);
  }

  /** Gives back what worker `w`, whose thread has exited, reserved and holds (SharedLimitMemory.releaseWorker). */
  releaseWorker(w: number): void {
    if (!(this.memory instanceof SharedLimitMemory)) throw new Error(`releaseWorker(): this limiter store's memory is ${this.#memoryName()}; no other worker shares it`);
    this.memory.releaseWorker(w);
  }

  #memoryName(): string {
    const m = this.memory;
    return m instanceof LeaderLimitMemory ? "a leader's" : m instanceof FollowerLimitMemory ? `worker ${m.worker}'s (a follower)` : 'local';
  }
}

function isKeyed(e: LocalEntry): e is KeyedEntry['entry'] {
  return e.budget.keyed;
}

/** What one key's budget of a keyed entry stands at: the x-ratelimit-* values, and what is used of it. */
export interface KeyBudget extends LimitStatus {
  /** Spent in the current window: request tokens taken, or LLM tokens charged. */
  readonly used: number;
  /** LLM tokens held by requests in flight (tokens entries; 0 for requests). */
  readonly reserved: number;
  /** Nothing used and nothing held: the same as a new key. */
  readonly idle: boolean;
}

/**
 * Every key's budget of a keyed entry, each under its key's limit (its override, else the
 * entry's amount), then the overflow budget (key null, under the entry's amount); read through
 * the states' methods, changing nothing. All are read at once under the entry's lock, which is
 * never held while the caller iterates.
 */
export function* keyBudgets(k: KeyedEntry, now: number): Generator<[string | null, KeyBudget]> {
  const lock = k.lock;
  if (lock === null) {
    yield* readKeyBudgets(k.entry, now);
    return;
  }
  yield* underLock(lock, () => [...readKeyBudgets(k.entry, now)]);
}

function* readKeyBudgets(e: KeyedEntry['entry'], now: number): Generator<[string | null, KeyBudget]> {
  if (e.kind === 'requests') {
    const { table, limits } = e.budget;
    const one = (state: RequestBucket, limit: BucketLimit): KeyBudget => {
      const s = bucketStatus(e, { state, limit }, now);
      return { ...s, used: Math.max(0, limit.requests + limit.burst - s.remaining), reserved: 0, idle: state.idle(limit, now) };
    };
    for (const [key, state] of table.entries()) yield [key, one(state, limits.of(key))];
    yield [null, one(table.overflow, limits.fallback)];
    return;
  }
  const { table, limits } = e.budget;
  const one = (state: TokenWindow, limit: number): KeyBudget => ({ ...windowStatus(e, { state, limit }, now), used: state.used(now), reserved: state.reserved(now), idle: state.idle(limit, now) });
  for (const [key, state] of table.entries()) yield [key, one(state, limits.of(key))];
  yield [null, one(table.overflow, limits.fallback)];
}

function bucketStatus(e: LocalEntry, b: MetBucket, now: number): LimitStatus {
  return { limit: String(b.limit.requests + b.limit.burst), remaining: b.state.remaining(b.limit, now), resetSeconds: b.state.resetSeconds(now), policy: e.policy };
}

function windowStatus(e: LocalEntry, w: MetWindow, now: number): LimitStatus {
  return { limit: String(w.limit), remaining: w.state.remaining(w.limit, now), resetSeconds: w.state.resetSeconds(now), policy: e.policy };
}

/** A limiter's entries, in config order, with the index each has in its policy (their counters' identity). */
export interface IndexedConfig {
  readonly index: number;
  readonly config: LocalRateLimitIR;
}

export class LocalLimiter {
  readonly hasTokens: boolean;
  /** Some entry is keyed: each request reads its keys and meets its own budgets. */
  readonly keyed: boolean;
  /** The budgets of an unkeyed limiter, in entry order by kind (a keyed one finds its per request). */
  readonly #buckets: readonly MetBucket[];
  readonly #windows: readonly MetWindow[];
  readonly #requestsHold: LocalHold;
  readonly #reads: ReadonlySet<InputName>;

  constructor(
    readonly level: LimitLevel,
    readonly scope: string,
    readonly entries: readonly LocalEntry[],
    private readonly clock: Clock,
    private readonly limits: EvaluationLimits,
    /** The lock of the memory the entries' state is in; null (the default) when no other thread reads it. */
    private readonly lock: Lock | null = null,
  ) {
    this.#buckets = entries.flatMap((e) => (e.kind === 'requests' && !e.budget.keyed ? [{ state: e.budget.state, limit: e.budget.limit }] : []));
    this.#windows = entries.flatMap((e) => (e.kind === 'tokens' && !e.budget.keyed ? [{ state: e.budget.state, limit: e.budget.limit }] : []));
    this.hasTokens = entries.some((e) => e.kind === 'tokens');
    const keys = entries.flatMap((e) => (e.budget.keyed ? [e.budget.key] : []));
    this.keyed = keys.length > 0;
    this.#reads = readsOf(keys.flatMap((k) => (k.program ? [k.program] : [])));
    this.#requestsHold = new RequestsHold(this.#buckets, clock, this.lock);
  }

  /** Throws RateLimitKeyError when a key's expression does not compile (naming it). */
  static compile(level: LimitLevel, scope: string, configs: readonly IndexedConfig[], store: LimiterStore, limits: EvaluationLimits): LocalLimiter {
    const entries = configs.map(({ index, config }) => {
      const key = config.by ? compileKey(config.by, limits, `rateLimit.local[${index}].by`) : null;
      return store.entry(level, scope, index, config, key);
    });
    return new LocalLimiter(level, scope, entries, store.clock, limits, store.memory.lock);
  }

  /**
   * `reservation`: the tokens an admitted request holds in each tokens window until settled.
   * `facts`: the request, read only when an entry is keyed.
   */
  check(reservation: number, facts: () => RequestFacts): LocalCheck {
    let keys: readonly (string | null)[] | null = null;
    if (this.keyed) {
      const read = this.#keysOf(facts());
      if (!Array.isArray(read)) return read;
      keys = read;
    }
    if (this.lock === null) return this.#decide(reservation, keys, this.clock());
    return underLock(this.lock, () => this.#decide(reservation, keys, this.clock()));
  }

  /** The check proper, under the lock: `keys`, of a keyed limiter, the request's key value for each entry (null: unkeyed). */
  #decide(reservation: number, keys: readonly (string | null)[] | null, now: number): LocalCheck {
    let buckets = this.#buckets;
    let windows = this.#windows;
    if (keys) ({ buckets, windows } = this.#budgetsOf(keys, now));
    // The first entry, in config order, without room refuses.
    let b = 0;
    let w = 0;
    for (const e of this.entries) {
      let full: boolean;
      if (e.kind === 'tokens') {
        const win = windows[w++]!;
        full = !win.state.admits(win.limit, now);
      } else {
        const bucket = buckets[b++]!;
        full = bucket.state.remaining(bucket.limit, now) < 1;
      }
      if (full) return { allowed: false, refusedBy: e.kind, statuses: this.#statuses(buckets, windows, now) };
    }
    for (const bucket of buckets) bucket.state.take(bucket.limit, now);
    // An unkeyed limiter without tokens entries holds no per-request state: nothing is allocated.
    const hold =
      windows.length === 0 && !this.keyed
        ? this.#requestsHold
        : new BudgetsHold(
            buckets,
            windows.map((win) => win.state),
            reservation,
            windows.map((win) => win.state.reserve(reservation, now)),
            this.clock,
            this.lock,
          );
    return { allowed: true, hold, statuses: this.#statuses(buckets, windows, now) };
  }

  /** The request's key value of each entry (null for an unkeyed one), or why its keys cannot be read. */
  #keysOf(facts: RequestFacts): (string | null)[] | Extract<LocalCheck, { refusedBy: 'input' }> {
    let bindings = null;
    if (this.#reads.size) {
      const bound = bindRequest(facts, this.#reads, this.limits.cel);
      if (!bound.ok) return { allowed: false, refusedBy: 'input', input: bound.input, problem: bound.problem };
      bindings = bound.bindings;
    }
    return this.entries.map((e) => (e.budget.keyed ? keyValue(e.budget.key, facts, bindings) : null));
  }

  /** The budgets of the request's keys (unkeyed entries: their one budget). */
  #budgetsOf(keys: readonly (string | null)[], now: number): { buckets: MetBucket[]; windows: MetWindow[] } {
    const buckets: MetBucket[] = [];
    const windows: MetWindow[] = [];
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (e.kind === 'requests') buckets.push(met(e.budget, keys[i] ?? null, now));
      else windows.push(met(e.budget, keys[i] ?? null, now));
    }
    return { buckets, windows };
  }

  /** The status of every entry's budget, for the x-ratelimit-* headers. */
  #statuses(buckets: readonly MetBucket[], windows: readonly MetWindow[], now: number): LimitStatus[] {
    let b = 0;
    let w = 0;
    return this.entries.map((e) => (e.kind === 'requests' ? bucketStatus(e, buckets[b++]!, now) : windowStatus(e, windows[w++]!, now)));
  }
}

/**
 * The budget of an entry a request meets, with its limit: a keyed entry's for the request's key
 * (its override, else the entry's amount; the overflow budget, when the table is full, has the
 * entry's amount: it is shared by keys that found no room, whatever their overrides).
 */
function met<L, S extends KeyState<L>>(budget: Budget<L, S>, key: string | null, now: number): Met<L, S> {
  if (!budget.keyed) return budget;
  if (key === null) throw new Error('a keyed rate limit entry was given no key value');
  const state = budget.table.get(key, now, budget.limits);
  return { state, limit: state === budget.table.overflow ? budget.limits.fallback : budget.limits.of(key) };
}
