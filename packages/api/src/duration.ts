// Gateway API Duration strings ("1h30m", "500ms") to milliseconds.
import { API_ERRORS } from './errors/catalog.js';

const PART = /([0-9]{1,5})(h|ms|m|s)/g;
const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;

export function parseDuration(text: string): number {
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(PART)) {
    if (m.index !== consumed) break;
    total += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
    consumed += m[0].length;
  }
  if (consumed !== text.length || consumed === 0) {
    throw API_ERRORS.durationInvalid.create({ text });
  }
  return total;
}
