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
import { bindRequest, readsOf, type CelBindings, type EvaluationLimits, type InputName, type LocalRateLimitIR } from '@tollgate/api';
import type { Clock } from '../clock.js';
import type { RequestFacts } from '../facts.js';
import type { LimitStatus } from '../headers.js';
import { compileKey, keyValue, type CompiledKey } from '../key.js';
import { KeyLimits } from './key-limits.js';
import { KeyedTable, unitMs, windowOrigin, type KeyState } from './keyed-table.js';
import { RequestBucket, type BucketLimit } from './request-bucket.js';
import { TokenWindow } from './token-window.js';

export type LimitLevel = 'gateway' | 'route';

/** One budget for every request, under one limit; or one per key value, each under its key's limit. */
type Budget<L, S extends KeyState<L>> =
  | { readonly keyed: false; readonly state: S; readonly limit: L }
  | { readonly keyed: true; readonly key: CompiledKey; readonly table: KeyedTable<L, S>; readonly limits: KeyLimits<L> };

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
  ) {}

  refund(): void {
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
  ) {}

  refund(): void {
    const now = this.clock();
    for (const b of this.buckets) b.state.giveBack(b.limit, now);
    for (let i = 0; i < this.windows.length; i++) this.windows[i]!.release(this.amount, this.reservedIn[i]!, now);
  }

  settle(tokens: number | null): void {
    const now = this.clock();
    for (let i = 0; i < this.windows.length; i++) {
      if (tokens === null) this.windows[i]!.release(this.amount, this.reservedIn[i]!, now);
      else this.windows[i]!.settle(this.amount, this.reservedIn[i]!, tokens, now);
    }
  }

  copy(): LocalHold {
    if (this.windows.length === 0) return NOTHING_HELD;
    const now = this.clock();
    return new BudgetsHold([], this.windows, this.amount, this.windows.map((w) => w.reserve(this.amount, now)), this.clock);
  }
}

export interface LimiterStoreOptions {
  /** config.maxRateLimitKeys: the key values a keyed entry keeps a budget for. */
  readonly maxKeys: number;
  /** A request of a keyed entry was given the overflow budget (metrics, a throttled warn). */
  readonly overflowed?: (entry: { readonly level: LimitLevel; readonly scope: string; readonly index: number; readonly kind: LocalEntry['kind'] }) => void;
}

/** A bucket, a window or a keyed table of either; told apart by instanceof where it is taken back. */
type State = object;

/** A keyed entry of the config in force, where it is: what GET /budgets lists. */
export interface KeyedEntry {
  readonly level: LimitLevel;
  readonly scope: string;
  readonly index: number;
  readonly entry: LocalEntry & { readonly budget: { readonly keyed: true } };
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
  #live = new Map<string, State>();
  #next = new Map<string, State>();
  /** The keyed entries of the config in force, and of the one being compiled (read-only listing). */
  #liveKeyed: readonly KeyedEntry[] = [];
  /** By table: listeners sharing a Gateway-wide policy compile the same entry once each, on one table. */
  #nextKeyed = new Map<object, KeyedEntry>();
  constructor(
    readonly clock: Clock,
    readonly options: LimiterStoreOptions,
  ) {}

  entry(level: LimitLevel, scope: string, index: number, config: LocalRateLimitIR, key: CompiledKey | null): LocalEntry {
    // Not the amounts: they are parameters of each check (see the class comment).
    const id = `${level}:${scope}#${index}:${config.kind}:${config.unit}:${JSON.stringify(config.by ?? null)}`;
    const clock = this.clock;
    const ms = unitMs(config.unit);
    const overflowed = () => this.options.overflowed?.({ level, scope, index, kind: config.kind });
    const policy = policyName(level, index, config);
    let made: LocalEntry;
    if (config.kind === 'requests') {
      const budget = this.#budget(id, RequestBucket, config, key, bucketLimits(config), overflowed, (start) => new RequestBucket(ms, clock, start));
      made = { kind: 'requests', config, budget, policy };
    } else {
      const budget = this.#budget(id, TokenWindow, config, key, tokenLimits(config), overflowed, (start) => new TokenWindow(ms, clock, start));
      made = { kind: 'tokens', config, budget, policy };
    }
    if (isKeyed(made)) this.#nextKeyed.set(made.budget.table, { level, scope, index, entry: made });
    return made;
  }

  /** The keyed entries of the config in force (GET /budgets reads their tables; nothing here changes them). */
  keyedEntries(): readonly KeyedEntry[] {
    return this.#liveKeyed;
  }

  /** The entry's budget as the live config (or this one, for a repeated entry) left it, else a new one. */
  #budget<L, S extends (RequestBucket | TokenWindow) & KeyState<L>>(
    id: string,
    type: abstract new (...args: never[]) => S,
    config: LocalRateLimitIR,
    key: CompiledKey | null,
    limits: KeyLimits<L>,
    overflowed: () => void,
    make: (start: number) => S,
  ): Budget<L, S> {
    const prior = this.#next.get(id) ?? this.#live.get(id);
    const origin = windowOrigin(config.unit, this.clock());
    const budget: Budget<L, S> = key
      ? { keyed: true, key, limits, table: prior instanceof KeyedTable ? (prior as KeyedTable<L, S>) : new KeyedTable<L, S>(this.options.maxKeys, config.unit, origin, make, overflowed) }
      : { keyed: false, limit: limits.fallback, state: prior instanceof type ? prior : make(origin) };
    this.#next.set(id, budget.keyed ? budget.table : budget.state);
    return budget;
  }

  /** Called once a new config is in place: state no entry of it uses is dropped. */
  commit(): void {
    this.#live = this.#next;
    this.#next = new Map();
    this.#liveKeyed = [...this.#nextKeyed.values()];
    this.#nextKeyed = new Map();
  }

  /** Called when a new config is refused: forget what it prepared. */
  discard(): void {
    this.#next = new Map();
    this.#nextKeyed = new Map();
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
 * the states' methods, changing nothing.
 */
export function* keyBudgets(e: KeyedEntry['entry'], now: number): Generator<[string | null, KeyBudget]> {
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
  ) {
    this.#buckets = entries.flatMap((e) => (e.kind === 'requests' && !e.budget.keyed ? [{ state: e.budget.state, limit: e.budget.limit }] : []));
    this.#windows = entries.flatMap((e) => (e.kind === 'tokens' && !e.budget.keyed ? [{ state: e.budget.state, limit: e.budget.limit }] : []));
    this.hasTokens = entries.some((e) => e.kind === 'tokens');
    const keys = entries.flatMap((e) => (e.budget.keyed ? [e.budget.key] : []));
    this.keyed = keys.length > 0;
    this.#reads = readsOf(keys.flatMap((k) => (k.program ? [k.program] : [])));
    this.#requestsHold = new RequestsHold(this.#buckets, clock);
  }

  /** Throws RateLimitKeyError when a key's expression does not compile (naming it). */
  static compile(level: LimitLevel, scope: string, configs: readonly IndexedConfig[], store: LimiterStore, limits: EvaluationLimits): LocalLimiter {
    const entries = configs.map(({ index, config }) => {
      const key = config.by ? compileKey(config.by, limits, `rateLimit.local[${index}].by`) : null;
      return store.entry(level, scope, index, config, key);
    });
    return new LocalLimiter(level, scope, entries, store.clock, limits);
  }

  /**
   * `reservation`: the tokens an admitted request holds in each tokens window until settled.
   * `facts`: the request, read only when an entry is keyed.
   */
  check(reservation: number, facts: () => RequestFacts): LocalCheck {
    let buckets = this.#buckets;
    let windows = this.#windows;
    const now = this.clock();
    if (this.keyed) {
      const found = this.#budgetsOf(facts(), now);
      if (!('buckets' in found)) return found;
      ({ buckets, windows } = found);
    }
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
          );
    return { allowed: true, hold, statuses: this.#statuses(buckets, windows, now) };
  }

  /** The budgets of the request's keys (unkeyed entries: their one budget), or why its keys cannot be read. */
  #budgetsOf(facts: RequestFacts, now: number): { buckets: MetBucket[]; windows: MetWindow[] } | Extract<LocalCheck, { refusedBy: 'input' }> {
    let bindings = null;
    if (this.#reads.size) {
      const bound = bindRequest(facts, this.#reads, this.limits.cel);
      if (!bound.ok) return { allowed: false, refusedBy: 'input', input: bound.input, problem: bound.problem };
      bindings = bound.bindings;
    }
    const buckets: MetBucket[] = [];
    const windows: MetWindow[] = [];
    for (const e of this.entries) {
      if (e.kind === 'requests') buckets.push(met(e.budget, facts, bindings, now));
      else windows.push(met(e.budget, facts, bindings, now));
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
function met<L, S extends KeyState<L>>(budget: Budget<L, S>, facts: RequestFacts, bindings: CelBindings | null, now: number): Met<L, S> {
  if (!budget.keyed) return budget;
  const key = keyValue(budget.key, facts, bindings);
  const state = budget.table.get(key, now, budget.limits);
  return { state, limit: state === budget.table.overflow ? budget.limits.fallback : budget.limits.of(key) };
}
