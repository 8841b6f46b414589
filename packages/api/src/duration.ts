// Gateway API Duration strings (GEP-2257: "1h30m", "500ms") to milliseconds, with the bounds
// every timeout of the project shares. The upper bound exists because a Node.js timer holds at
// most 2^31-1 ms (about 24.8 days): a longer one fires at once instead, so "597h" would time
// every request out immediately. 596h is that limit rounded down to whole hours.
import { API_ERRORS } from './errors/catalog.js';
import type { Parsed } from './host-port.js';

export const DURATION_PATTERN = '^([0-9]{1,5}(h|m|s|ms)){1,4}$';
/** Four parts of at most five digits and a two-letter unit. */
export const DURATION_MAX_LENGTH = 28;
export const MAX_DURATION = '596h';
export const MAX_DURATION_MS = 596 * 3_600_000;
export const DURATION_EXPECTED = 'a duration such as 500ms, 10s, 1m or 1h30m';

export interface DurationRules {
  /** 0s is accepted (the field says what it means, e.g. "no timeout"); otherwise it must be more than 0s. */
  readonly allowZero?: boolean;
}

const PART = /([0-9]{1,5})(h|ms|m|s)/g;
const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;

/** Milliseconds of a duration, or what is wrong with it (phrased to follow `got "<value>"; `). */
export function checkDuration(text: string, rules: DurationRules = {}): Parsed<number> {
  let total = 0;
  let consumed = 0;
  let parts = 0;
  for (const m of text.matchAll(PART)) {
    if (m.index !== consumed) break;
    total += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
    consumed += m[0].length;
    parts++;
  }
  if (consumed !== text.length || consumed === 0 || parts > 4) return { ok: false, problem: `expected ${DURATION_EXPECTED}` };
  if (total > MAX_DURATION_MS) {
    const zero = rules.allowZero ? '; 0s means no timeout' : '';
    return { ok: false, problem: `expected at most ${MAX_DURATION} (the longest timer the proxy can set)${zero}` };
  }
  if (total === 0 && !rules.allowZero) return { ok: false, problem: `expected more than 0s, ${DURATION_EXPECTED}` };
  return { ok: true, value: total };
}

/** Milliseconds of a duration that validation accepted; throws on anything else. */
export function parseDuration(text: string, rules: DurationRules = { allowZero: true }): number {
  const r = checkDuration(text, rules);
  if (!r.ok) throw API_ERRORS.durationInvalid.create({ text, problem: r.problem });
  return r.value;
}
