// The rows of GET /budgets: one per key of every keyed rate limit of the config in force. Local
// entries are read from their key tables (through read-only methods: listing changes no budget);
// keyed global descriptors show the last answer the rate limit service gave for the key.
//
// A key value is shown as the key table holds it (a long one is already a hash), except where it
// may be a credential: a Header key on a header credentials travel in (Authorization, Cookie,
// X-API-Key, an apiKey policy's own header) and an Expression key that reads the request (it may
// read such a header) are shown as `[redacted sha256:<16 chars>]`, one value per key still, so
// the operator can tell keys apart without the proxy handing out what a client authenticates with.
import { createHash } from 'node:crypto';
import { GLOBAL_BUDGET_SOURCE, isSensitiveHeader, LOCAL_BUDGET_SOURCE, type BudgetRow, type ExtraCredentials, type RateLimitKeyIR } from '@tollgate/api';
import { keyEntryName } from '../ratelimit/key.js';
import { keyBudgets, type KeyedEntry } from '../ratelimit/local/limiter.js';
import type { GlobalAnswer } from '../ratelimit/global/answers.js';

export const LOCAL_SOURCE = LOCAL_BUDGET_SOURCE;
export const GLOBAL_SOURCE = GLOBAL_BUDGET_SOURCE;
export type { BudgetRow };

/** Whether the values of this key may carry a credential. */
function mayBeCredential(by: RateLimitKeyIR, credentials: ExtraCredentials, readsRequest: boolean): boolean {
  if (by.type === 'Header') return isSensitiveHeader(by.name) || credentials.headers.has(by.name.toLowerCase());
  if (by.type === 'Expression') return readsRequest;
  return false;
}

function redacted(value: string): string {
  return `[redacted sha256:${createHash('sha256').update(value, 'utf8').digest('base64url').slice(0, 16)}]`;
}

/** Whether an Expression key reads the request (anything but the consumer, the model and the verified client certificate). */
function expressionReadsRequest(reads: ReadonlySet<string> | undefined): boolean {
  if (!reads) return true;
  for (const r of reads) if (!r.startsWith('consumer.') && !r.startsWith('llm.') && !r.startsWith('connection.')) return true;
  return false;
}

export interface RowSources {
  readonly keyed: readonly KeyedEntry[];
  readonly answers: Iterable<GlobalAnswer>;
  readonly credentials: ExtraCredentials;
  readonly now: number;
}

/** Every row, unsorted. Idle keys (nothing used, nothing held) are left out: they equal a new key. */
export function budgetRows(src: RowSources): BudgetRow[] {
  const rows: BudgetRow[] = [];
  const { now } = src;
  for (const k of src.keyed) {
    const e = k.entry;
    const by = e.budget.key.ir;
    const secret = mayBeCredential(by, src.credentials, expressionReadsRequest(e.budget.key.program?.reads));
    const base = { source: LOCAL_SOURCE, level: k.level, scope: k.scope, entry: `rateLimit.local[${k.index}]`, by: keyEntryName(by), kind: e.kind, window: e.config.unit, answeredAt: null } as const;
    for (const [key, b] of keyBudgets(k, now)) {
      if (b.idle) continue;
      rows.push({
        ...base,
        key: key === null ? null : secret ? redacted(key) : key,
        overflow: key === null,
        limit: Number(b.limit),
        used: b.used,
        reserved: b.reserved,
        remaining: b.remaining,
        resetSeconds: b.resetSeconds,
        resetAt: new Date(now + b.resetSeconds * 1000).toISOString(),
      });
    }
  }
  for (const a of src.answers) {
    const p = a.place;
    const secret = mayBeCredential(p.by, src.credentials, expressionReadsRequest(p.reads ?? undefined));
    rows.push({
      source: GLOBAL_SOURCE,
      level: null,
      scope: p.scope,
      entry: `rateLimit.global.descriptors[${p.index}]`,
      by: keyEntryName(p.by),
      key: secret ? redacted(a.key) : a.key,
      overflow: false,
      kind: p.unit === 'Tokens' ? 'tokens' : 'requests',
      limit: a.limit,
      used: Math.max(0, a.limit - a.remaining),
      reserved: 0,
      remaining: a.remaining,
      window: `${a.windowSeconds}s`,
      resetSeconds: Math.max(0, Math.ceil((a.resetAt - now) / 1000)),
      resetAt: new Date(a.resetAt).toISOString(),
      answeredAt: new Date(a.answeredAt).toISOString(),
    });
  }
  return rows;
}

/** Share of the budget spent (reservations included), for sorting: most used first. */
export function share(r: Pick<BudgetRow, 'used' | 'reserved' | 'limit'>): number {
  return r.limit > 0 ? (r.used + r.reserved) / r.limit : 0;
}

/** Most used first: by share of the limit, then by amount, then by key for a stable order. */
export function byUse(a: BudgetRow, b: BudgetRow): number {
  return share(b) - share(a) || b.used - a.used || (a.key ?? '').localeCompare(b.key ?? '') || a.scope.localeCompare(b.scope) || a.entry.localeCompare(b.entry);
}
