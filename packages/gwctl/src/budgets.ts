// The answer of a proxy's GET /budgets, checked (it comes from outside gwctl), and the budgets of
// several proxies of one Gateway merged into one row per budget and key (docs/gwctl.md, "budgets").
//
// Merging follows where the counters are. A local budget is counted by each proxy on its own, so
// the Gateway's budget for a key is the sum over the proxies: limit, used, reserved and remaining
// add up, and the earliest reset is shown. A global budget is one counter in the rate limit
// service that every proxy asked about; each proxy only knows the answer it got last, so the
// most recent answer among them is shown, never a sum.
import { GLOBAL_BUDGET_SOURCE, LOCAL_BUDGET_SOURCE, type BudgetRow } from '@tollgate/api';
import { GwctlError } from './errors.js';
import { checkMissingWorkers, type MissingWorker } from './missing-workers.js';

export const LOCAL = LOCAL_BUDGET_SOURCE;
export const GLOBAL = GLOBAL_BUDGET_SOURCE;
export type { BudgetRow };

export interface BudgetsAnswer {
  readonly version: string;
  readonly total: number;
  readonly budgets: readonly BudgetRow[];
  /** Threads of the proxy whose global answers are not in it (absent: every thread answered). */
  readonly missingWorkers?: readonly MissingWorker[];
}

/** Most rows one answer may hold (the admin server's ?limit= maximum). */
export const MAX_ROWS = 1000;
const MAX_TEXT = 1024;

function fail(from: string, what: string): never {
  throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `GET /budgets of ${from} is not a budgets answer: ${what}`);
}

const isText = (v: unknown, nullable = false): boolean => (nullable && v === null) || (typeof v === 'string' && v.length <= MAX_TEXT);
const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;

function checkRow(v: unknown, at: string, from: string): BudgetRow {
  if (typeof v !== 'object' || v === null) fail(from, `${at} is not an object`);
  const r = v as Record<string, unknown>;
  if (r.source !== LOCAL && r.source !== GLOBAL) fail(from, `${at}.source is neither "${LOCAL}" nor "${GLOBAL}"`);
  if (r.kind !== 'requests' && r.kind !== 'tokens') fail(from, `${at}.kind is neither requests nor tokens`);
  for (const f of ['scope', 'entry', 'by', 'window', 'resetAt'] as const) if (!isText(r[f])) fail(from, `${at}.${f} is not a string of at most ${MAX_TEXT} characters`);
  for (const f of ['level', 'key', 'answeredAt'] as const) if (!isText(r[f], true)) fail(from, `${at}.${f} is not a string or null`);
  for (const f of ['limit', 'used', 'reserved', 'remaining', 'resetSeconds'] as const) if (!isCount(r[f])) fail(from, `${at}.${f} is not a number at or above 0`);
  if (typeof r.overflow !== 'boolean') fail(from, `${at}.overflow is not a boolean`);
  return r as unknown as BudgetRow;
}

export function checkBudgets(value: unknown, from: string): BudgetsAnswer {
  if (typeof value !== 'object' || value === null) fail(from, 'not a JSON object');
  const v = value as Record<string, unknown>;
  if (!Array.isArray(v.budgets)) fail(from, 'it has no budgets list');
  if (v.budgets.length > MAX_ROWS) fail(from, `${v.budgets.length} rows, more than ${MAX_ROWS}`);
  if (!isCount(v.total)) fail(from, 'total is not a number');
  if (!isText(v.version)) fail(from, 'version is not a string');
  const answer = { version: v.version as string, total: v.total as number, budgets: v.budgets.map((r, i) => checkRow(r, `budgets[${i}]`, from)) };
  const missing = checkMissingWorkers(v.missingWorkers, (what) => fail(from, what));
  return missing.length ? { ...answer, missingWorkers: missing } : answer;
}

/** One proxy's numbers for a merged row. */
export interface ReplicaBudget {
  readonly proxy: string;
  readonly limit: number;
  readonly used: number;
  readonly reserved: number;
  readonly remaining: number;
  readonly resetAt: string;
  readonly answeredAt: string | null;
}

export interface MergedRow extends BudgetRow {
  readonly replicas: readonly ReplicaBudget[];
}

const identity = (r: BudgetRow) => JSON.stringify([r.source, r.scope, r.entry, r.by, r.key, r.overflow]);

function sum(rows: readonly BudgetRow[]): Pick<BudgetRow, 'limit' | 'used' | 'reserved' | 'remaining' | 'resetSeconds' | 'resetAt'> {
  const soonest = rows.reduce((a, b) => (b.resetSeconds < a.resetSeconds ? b : a));
  return {
    limit: rows.reduce((n, r) => n + r.limit, 0),
    used: rows.reduce((n, r) => n + r.used, 0),
    reserved: rows.reduce((n, r) => n + r.reserved, 0),
    remaining: rows.reduce((n, r) => n + r.remaining, 0),
    resetSeconds: soonest.resetSeconds,
    resetAt: soonest.resetAt,
  };
}

/** The answers of the proxies of one Gateway (proxy name, answer), one row per budget and key. */
export function mergeBudgets(answers: readonly { readonly proxy: string; readonly answer: BudgetsAnswer }[]): MergedRow[] {
  const groups = new Map<string, { proxy: string; row: BudgetRow }[]>();
  for (const { proxy, answer } of answers) {
    for (const row of answer.budgets) {
      const id = identity(row);
      let g = groups.get(id);
      if (!g) groups.set(id, (g = []));
      g.push({ proxy, row });
    }
  }
  const merged: MergedRow[] = [];
  for (const g of groups.values()) {
    const rows = g.map((x) => x.row);
    const replicas = g.map(({ proxy, row }) => ({ proxy, limit: row.limit, used: row.used, reserved: row.reserved, remaining: row.remaining, resetAt: row.resetAt, answeredAt: row.answeredAt }));
    if (rows[0]!.source === GLOBAL) {
      // The latest answer of the service about this counter.
      const latest = rows.reduce((a, b) => ((b.answeredAt ?? '') > (a.answeredAt ?? '') ? b : a));
      merged.push({ ...latest, replicas });
    } else {
      merged.push({ ...rows[0]!, ...sum(rows), replicas });
    }
  }
  return merged.sort(mostUsedFirst);
}

/** The share of its limit a row has spent (reservations included). */
export function spent(r: Pick<BudgetRow, 'used' | 'reserved' | 'limit'>): number {
  return r.limit > 0 ? (r.used + r.reserved) / r.limit : 0;
}

function mostUsedFirst(a: BudgetRow, b: BudgetRow): number {
  return spent(b) - spent(a) || b.used - a.used || (a.key ?? '').localeCompare(b.key ?? '') || a.scope.localeCompare(b.scope) || a.entry.localeCompare(b.entry);
}
