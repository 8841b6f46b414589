// The last answer the rate limit service gave for each key of a keyed global descriptor, for
// GET /budgets. The counters are the service's (in Redis, shared by every replica): a proxy only
// knows what the service said the last time it asked about a key, so that is what it shows,
// marked as such. Bounded: at most `max` answers, the least recently answered dropped first; an
// answer whose window has ended says nothing about the new window and is not shown.
import type { RateLimitKeyIR } from '@tollgate/api';
import type { RlsDescriptorStatus } from './proto.js';
import { windowSeconds } from './headers.js';

/** Default bound on the answers kept (about 300 bytes each). */
export const DEFAULT_MAX_GLOBAL_ANSWERS = 10_000;

/** What identifies a keyed descriptor across configs: its answers are kept while a config has it. */
export function placeId(scope: string, domain: string, index: number, by: RateLimitKeyIR): string {
  return `${scope}\u0000${domain}\u0000${index}\u0000${JSON.stringify(by)}`;
}

/** Where an answer belongs: the policy's scope, the domain and the descriptor. */
export interface AnswerPlace {
  readonly scope: string;
  readonly domain: string;
  readonly service: string;
  /** Index of the descriptor in the policy's `global.descriptors`. */
  readonly index: number;
  readonly unit: 'Requests' | 'Tokens';
  readonly by: RateLimitKeyIR;
  /** What an Expression key's program reads (null for the other kinds). */
  readonly reads: ReadonlySet<string> | null;
}

export interface GlobalAnswer {
  readonly place: AnswerPlace;
  readonly key: string;
  /** requests_per_unit of the limit the service applied. */
  readonly limit: number;
  readonly remaining: number;
  readonly overLimit: boolean;
  /** Length of the service's window, in seconds (its unit). */
  readonly windowSeconds: number;
  /** When the service answered (ms since the epoch). */
  readonly answeredAt: number;
  /** When the window the answer describes ends (ms since the epoch). */
  readonly resetAt: number;
}

/** What an answer is about: its descriptor and key (one answer kept per answerId). */
function answerId(a: Pick<GlobalAnswer, 'place' | 'key'>): string {
  return `${placeId(a.place.scope, a.place.domain, a.place.index, a.place.by)}\u0000${a.key}`;
}

/**
 * The answers of several threads (each has its own channel to the service and keeps what it was
 * told): per key, the one the service gave last, as one thread keeps its own; an equal time goes
 * to the answer that counts more spent (the service's counter only grows within a window).
 */
export function latestAnswers(parts: Iterable<Iterable<GlobalAnswer>>): GlobalAnswer[] {
  const byId = new Map<string, GlobalAnswer>();
  for (const part of parts) {
    for (const a of part) {
      const id = answerId(a);
      const seen = byId.get(id);
      if (!seen || a.answeredAt > seen.answeredAt || (a.answeredAt === seen.answeredAt && a.remaining < seen.remaining)) byId.set(id, a);
    }
  }
  return [...byId.values()];
}

export class GlobalAnswers {
  readonly #answers = new Map<string, GlobalAnswer>();

  constructor(
    readonly max: number = DEFAULT_MAX_GLOBAL_ANSWERS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.#answers.size;
  }

  /** Keeps the service's answer for one key; a status without a limit (no rule matched) is not a budget. */
  record(place: AnswerPlace, key: string, status: RlsDescriptorStatus): void {
    const limit = status.current_limit;
    if (!limit || limit.requests_per_unit === 0 || this.max === 0) return;
    const now = this.now();
    const window = windowSeconds(limit.unit);
    const d = status.duration_until_reset;
    const resetMs = d ? d.seconds * 1000 + Math.ceil(d.nanos / 1e6) : window > 0 ? window * 1000 - (now % (window * 1000)) : 0;
    const id = answerId({ place, key });
    // Re-inserted so the Map's order is the order of the last answers: the first is the oldest.
    this.#answers.delete(id);
    this.#answers.set(id, {
      place,
      key,
      limit: limit.requests_per_unit,
      remaining: status.limit_remaining,
      overLimit: status.code === 'OVER_LIMIT',
      windowSeconds: window,
      answeredAt: now,
      resetAt: now + resetMs,
    });
    if (this.#answers.size > this.max) this.#answers.delete(this.#answers.keys().next().value!);
  }

  /**
   * After a config is applied: the answers of descriptors it no longer has (by place id) are
   * dropped, so a removed or changed budget is not shown for the rest of its window.
   */
  retain(places: ReadonlySet<string>): void {
    for (const [id, a] of this.#answers) if (!places.has(placeId(a.place.scope, a.place.domain, a.place.index, a.place.by))) this.#answers.delete(id);
  }

  /** The answers whose window has not ended yet; the others are dropped. */
  *current(): IterableIterator<GlobalAnswer> {
    const now = this.now();
    for (const [id, a] of this.#answers) {
      if (a.resetAt <= now) this.#answers.delete(id);
      else yield a;
    }
  }
}
