// The local limits of one attachment point (a listener's gateway-level policy, or a route's).
// A check is synchronous: every tokens window must be within budget and every request bucket
// must have a token; only then are the request tokens taken and the token reservations made,
// so a refused request consumes nothing and concurrent requests can never be admitted past a
// bucket's capacity. What an admitted request took is held in a `LocalHold` until the request
// ends: refunded when another limit refuses it, settled with its usage when it completes.
//
// A keyed entry (`by`) keeps one bucket or window per key value (./keyed-table.ts): the check
// first reads the request's key for it, then decides on that key's budget exactly as above.
import { bindRequest, readsOf, type EvaluationLimits, type InputName, type LocalRateLimitIR } from '@tollgate/api';
import type { Clock } from '../clock.js';
import type { RequestFacts } from '../facts.js';
import type { LimitStatus } from '../headers.js';
import { compileKey, keyValue, type CompiledKey } from '../key.js';
import { KeyedTable, unitMs, windowOrigin, type KeyState } from './keyed-table.js';
import { RequestBucket } from './request-bucket.js';
import { TokenWindow } from './token-window.js';

export type LimitLevel = 'gateway' | 'route';

/** One budget for every request, or one per key value. */
type Budget<S extends KeyState> = { readonly keyed: false; readonly state: S } | { readonly keyed: true; readonly key: CompiledKey; readonly table: KeyedTable<S> };

export type LocalEntry =
  | { readonly kind: 'requests'; readonly config: LocalRateLimitIR; readonly budget: Budget<RequestBucket>; readonly limitText: string }
  | { readonly kind: 'tokens'; readonly config: LocalRateLimitIR; readonly budget: Budget<TokenWindow>; readonly limitText: string };

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
    readonly buckets: readonly RequestBucket[],
    private readonly clock: Clock,
  ) {}

  refund(): void {
    const now = this.clock();
    for (const b of this.buckets) b.giveBack(now);
  }

  settle(): void {}

  copy(): LocalHold {
    return NOTHING_HELD;
  }
}

/** The hold of a request on the budgets it met: its request tokens, its reservations and the windows they are in. */
class BudgetsHold implements LocalHold {
  constructor(
    private readonly buckets: readonly RequestBucket[],
    private readonly windows: readonly TokenWindow[],
    private readonly amount: number,
    /** Per window, the start of the window the reservation was made in. */
    private readonly reservedIn: readonly number[],
    private readonly clock: Clock,
  ) {}

  refund(): void {
    const now = this.clock();
    for (const b of this.buckets) b.giveBack(now);
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

type State = RequestBucket | TokenWindow | KeyedTable<RequestBucket | TokenWindow>;

/** A keyed entry of the config in force, where it is: what GET /budgets lists. */
export interface KeyedEntry {
  readonly level: LimitLevel;
  readonly scope: string;
  readonly index: number;
  readonly entry: LocalEntry & { readonly budget: { readonly keyed: true } };
}

/** Keeps limiter state across config reloads: an unchanged entry keeps its counters (every key's, for a keyed one). */
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
    const id = `${level}:${scope}#${index}:${JSON.stringify(config)}`;
    const clock = this.clock;
    const ms = unitMs(config.unit);
    const overflowed = () => this.options.overflowed?.({ level, scope, index, kind: config.kind });
    let made: LocalEntry;
    if (config.kind === 'requests') {
      const budget = this.#budget(id, RequestBucket, config, key, overflowed, (start) => new RequestBucket(config.requests, config.burst, ms, clock, start));
      made = { kind: 'requests', config, budget, limitText: String(config.requests + config.burst) };
    } else {
      const budget = this.#budget(id, TokenWindow, config, key, overflowed, (start) => new TokenWindow(config.tokens, ms, clock, start));
      made = { kind: 'tokens', config, budget, limitText: String(config.tokens) };
    }
    if (isKeyed(made)) this.#nextKeyed.set(made.budget.table, { level, scope, index, entry: made });
    return made;
  }

  /** The keyed entries of the config in force (GET /budgets reads their tables; nothing here changes them). */
  keyedEntries(): readonly KeyedEntry[] {
    return this.#liveKeyed;
  }

  /** The entry's budget as the live config (or this one, for a repeated entry) left it, else a new one. */
  #budget<S extends RequestBucket | TokenWindow>(
    id: string,
    type: abstract new (...args: never[]) => S,
    config: LocalRateLimitIR,
    key: CompiledKey | null,
    overflowed: () => void,
    make: (start: number) => S,
  ): Budget<S> {
    const prior = this.#next.get(id) ?? this.#live.get(id);
    const origin = windowOrigin(config.unit, this.clock());
    const budget: Budget<S> = key
      ? { keyed: true, key, table: prior instanceof KeyedTable ? (prior as KeyedTable<S>) : new KeyedTable(this.options.maxKeys, config.unit, origin, make, overflowed) }
      : { keyed: false, state: prior instanceof type ? prior : make(origin) };
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
}

/** One key's budget, read through the state's methods (the same status the headers give). */
export function keyBudget(e: LocalEntry, _key: string, state: RequestBucket | TokenWindow, now: number): KeyBudget {
  const s = status(e, state, now);
  if (state instanceof TokenWindow) return { ...s, used: state.used(now), reserved: state.reserved(now) };
  return { ...s, used: Math.max(0, Number(s.limit) - s.remaining), reserved: 0 };
}

function status(e: LocalEntry, state: RequestBucket | TokenWindow, now: number): LimitStatus {
  return { limit: e.limitText, remaining: state.remaining(now), resetSeconds: state.resetSeconds(now) };
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
  readonly #buckets: readonly RequestBucket[];
  readonly #windows: readonly TokenWindow[];
  readonly #requestsHold: LocalHold;
  readonly #reads: ReadonlySet<InputName>;

  constructor(
    readonly level: LimitLevel,
    readonly scope: string,
    readonly entries: readonly LocalEntry[],
    private readonly clock: Clock,
    private readonly limits: EvaluationLimits,
  ) {
    this.#buckets = entries.flatMap((e) => (e.kind === 'requests' && !e.budget.keyed ? [e.budget.state] : []));
    this.#windows = entries.flatMap((e) => (e.kind === 'tokens' && !e.budget.keyed ? [e.budget.state] : []));
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
      const full = e.kind === 'tokens' ? !windows[w++]!.admits(now) : buckets[b++]!.remaining(now) < 1;
      if (full) return { allowed: false, refusedBy: e.kind, statuses: this.#statuses(buckets, windows, now) };
    }
    for (const bucket of buckets) bucket.take(now);
    // An unkeyed limiter without tokens entries holds no per-request state: nothing is allocated.
    const hold =
      windows.length === 0 && !this.keyed
        ? this.#requestsHold
        : new BudgetsHold(buckets, windows, reservation, windows.map((win) => win.reserve(reservation, now)), this.clock);
    return { allowed: true, hold, statuses: this.#statuses(buckets, windows, now) };
  }

  /** The budgets of the request's keys (unkeyed entries: their one budget), or why its keys cannot be read. */
  #budgetsOf(facts: RequestFacts, now: number): { buckets: RequestBucket[]; windows: TokenWindow[] } | Extract<LocalCheck, { refusedBy: 'input' }> {
    let bindings = null;
    if (this.#reads.size) {
      const bound = bindRequest(facts, this.#reads, this.limits.cel);
      if (!bound.ok) return { allowed: false, refusedBy: 'input', input: bound.input, problem: bound.problem };
      bindings = bound.bindings;
    }
    const buckets: RequestBucket[] = [];
    const windows: TokenWindow[] = [];
    for (const e of this.entries) {
      if (e.kind === 'requests') buckets.push(e.budget.keyed ? e.budget.table.get(keyValue(e.budget.key, facts, bindings), now) : e.budget.state);
      else windows.push(e.budget.keyed ? e.budget.table.get(keyValue(e.budget.key, facts, bindings), now) : e.budget.state);
    }
    return { buckets, windows };
  }

  /** The status of every entry's budget, for the x-ratelimit-* headers. */
  #statuses(buckets: readonly RequestBucket[], windows: readonly TokenWindow[], now: number): LimitStatus[] {
    let b = 0;
    let w = 0;
    return this.entries.map((e) => status(e, e.kind === 'requests' ? buckets[b++]! : windows[w++]!, now));
  }
}
