// Cool-downs of backends: a backend that answered 429 or 503 is passed over for a while by the
// routes that can send elsewhere (failover, retries), for as long as its Retry-After asks
// (seconds or an HTTP date, held to config.maxCoolDown) or, without one, config.coolDown. One
// entry per backend (by backendKey(): a Backend resource, a Service port, a standalone address),
// whichever route saw the answer: a provider that is rate limited is so for every route that
// calls it with that key. Kept by the runtime across snapshots; entries of backends no snapshot
// names are dropped at the next apply, expired ones when read.
import type { BackendIR } from '@tollgate/api';
import type { Clock } from '../ratelimit/clock.js';
import { tlsSettingKey } from './backend-tls.js';

/**
 * The identity of a backend beyond one route: its name, and for TLS the setting (two Service
 * ports on one address with different TLS are two backends with pools of their own).
 */
export function backendKey(b: BackendIR): string {
  return b.kind !== 'invalid' && b.tls ? `${b.name}#${tlsSettingKey(b.tls)}` : b.name;
}

export interface CoolDown {
  /** Clock time (ms) until which the backend is passed over. */
  readonly until: number;
  /** The status that started it: 429 or 503. */
  readonly status: number;
  /** The backend's Retry-After as it sent it; null: none (or unreadable), the default cool-down applies. */
  readonly retryAfter: string | null;
  /**
   * The backend asked to be left alone: a 429, or a Retry-After. Retries do not go to it while
   * it cools down; a 503 without Retry-After only steers failover and first attempts elsewhere.
   */
  readonly asked: boolean;
}

/** What /backends and `gwctl config backends` show of a cool-down. */
export interface CoolDownView {
  readonly until: string;
  readonly remainingSeconds: number;
  readonly reason: string;
}

export interface CoolDownSettings {
  /** config.coolDown: without Retry-After. */
  readonly defaultMs: number;
  /** config.maxCoolDown: the most a Retry-After is honoured for. */
  readonly maxMs: number;
}

/** Longest Retry-After value read: a number of seconds or an IMF-fixdate is far shorter. */
const MAX_RETRY_AFTER_LENGTH = 64;

/**
 * A Retry-After value (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) as a wait in ms from
 * `now`, held to 0..maxMs; null when it is neither.
 */
export function retryAfterMs(value: string | undefined, now: number, maxMs: number): number | null {
  if (value === undefined || value.length === 0 || value.length > MAX_RETRY_AFTER_LENGTH) return null;
  const text = value.trim();
  if (/^[0-9]+$/.test(text)) return Math.min(Number(text) * 1000, maxMs);
  // An HTTP date names its day and its zone: anything Date.parse would read besides is not one.
  if (!/^[A-Za-z]{3}, /.test(text) || !/ GMT$/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.min(Math.max(at - now, 0), maxMs);
}

export class CoolDowns {
  readonly #byKey = new Map<string, CoolDown>();
  /**
   * Told each cool-down this thread starts or lengthens: with several threads, the others take
   * it too (adopt), so a provider that asked to be left alone is left alone by the whole process.
   */
  onRecorded: ((key: string, c: CoolDown) => void) | null = null;

  constructor(
    readonly settings: CoolDownSettings,
    private readonly clock: Clock,
  ) {}

  /** Backends cooling down now or recently (a route with none skips every lookup). */
  get size(): number {
    return this.#byKey.size;
  }

  /** The cool-down of `key` in force at `now`, or undefined. */
  get(key: string, now: number): CoolDown | undefined {
    const c = this.#byKey.get(key);
    if (c === undefined) return undefined;
    if (now < c.until) return c;
    this.#byKey.delete(key);
    return undefined;
  }

  /**
   * Records a 429 or 503 answer of the backend `key` with its Retry-After header (if any);
   * returns the cool-down in force. A shorter one never cuts a longer one already running.
   */
  record(key: string, status: number, retryAfter: string | undefined): CoolDown | undefined {
    const now = this.clock();
    const asked = retryAfterMs(retryAfter, now, this.settings.maxMs);
    const ms = asked ?? this.settings.defaultMs;
    const current = this.get(key, now);
    if (ms <= 0 || (current && current.until >= now + ms)) return current;
    const c: CoolDown = { until: now + ms, status, retryAfter: asked === null ? null : retryAfter!.trim(), asked: status === 429 || asked !== null };
    this.#byKey.set(key, c);
    this.onRecorded?.(key, c);
    return c;
  }

  /** A cool-down another thread of the process recorded: taken unless a longer one runs here. */
  adopt(key: string, c: CoolDown): void {
    const current = this.#byKey.get(key);
    if (current === undefined || current.until < c.until) this.#byKey.set(key, c);
  }

  /** Drops the entries of backends no longer configured. */
  retain(keys: ReadonlySet<string>): void {
    for (const key of this.#byKey.keys()) if (!keys.has(key)) this.#byKey.delete(key);
  }

  view(key: string): CoolDownView | null {
    const now = this.clock();
    const c = this.get(key, now);
    if (!c) return null;
    return {
      until: new Date(c.until).toISOString(),
      remainingSeconds: Math.ceil((c.until - now) / 1000),
      reason: c.retryAfter === null ? `${c.status} without Retry-After` : `${c.status} with Retry-After: ${c.retryAfter}`,
    };
  }
}
