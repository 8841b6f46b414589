// `gwctl budgets`: the budgets of the keyed rate limits per key, most used first, from every
// proxy of a Gateway (merged, ../budgets.ts) or from one standalone proxy (--local).
import { yaml } from '@tollgate/api';
import { adminJson } from '../admin-client.js';
import { checkBudgets, GLOBAL, mergeBudgets, type BudgetsAnswer, type MergedRow } from '../budgets.js';
import { describe, GwctlError } from '../errors.js';
import { missingWorkerWarnings } from '../missing-workers.js';
import { write, type Io } from '../io.js';
import { table } from '../table.js';
import { gatewayTargets, type TargetFlags } from '../target/resolve.js';
import type { Target } from '../target/target.js';

export type BudgetsFormat = 'table' | 'wide' | 'json' | 'yaml';

export interface BudgetsFlags extends TargetFlags {
  output?: BudgetsFormat;
  /** --limit: rows, 1 to 1000. */
  limit?: number;
  key?: string;
  scope?: string;
  by?: string;
  source?: 'local' | 'global';
}

/** The admin query of the flags; the admin server checks the values and names a bad one. */
export function budgetsPath(flags: BudgetsFlags): string {
  const q = new URLSearchParams();
  if (flags.limit !== undefined) q.set('limit', String(flags.limit));
  for (const k of ['key', 'scope', 'by', 'source'] as const) if (flags[k] !== undefined) q.set(k, flags[k]);
  const s = q.toString();
  return s ? `/budgets?${s}` : '/budgets';
}

/** 90 -> 1m30s; 7200 -> 2h; 0 -> 0s. */
export function duration(seconds: number): string {
  const s = Math.round(seconds);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [d && `${d}d`, h && `${h}h`, m && `${m}m`, s % 60 && `${s % 60}s`].filter(Boolean).slice(0, 2);
  return parts.length ? parts.join('') : '0s';
}

function keyText(r: MergedRow): string {
  if (r.overflow) return '(overflow)';
  return r.key === '' ? '(none)' : (r.key ?? '');
}

function render(rows: readonly MergedRow[], wide: boolean): string {
  if (!rows.length) return 'No budget in use: no keyed rate limit has a key with anything spent in its current window.\n';
  const headers = ['KEY', 'BY', 'USED', 'LIMIT', 'REMAINING', 'RESET', 'SCOPE', 'ENTRY', 'SOURCE', ...(wide ? ['RESERVED', 'WINDOW', 'PROXIES', 'ANSWERED'] : [])];
  return table(
    headers,
    rows.map((r) => [
      keyText(r),
      r.by,
      String(r.used),
      String(r.limit),
      String(r.remaining),
      duration(r.resetSeconds),
      r.scope,
      r.entry,
      r.source === GLOBAL ? 'global*' : 'local',
      ...(wide ? [String(r.reserved), r.window, String(r.replicas.length), r.answeredAt ?? '-'] : []),
    ]),
  ) + (rows.some((r) => r.source === GLOBAL) ? '* the last answer the rate limit service gave for the key\n' : '');
}

async function ask(t: Target, path: string): Promise<BudgetsAnswer> {
  return checkBudgets(await adminJson(t, path), t.description);
}

export async function budgets(ref: string | undefined, flags: BudgetsFlags, io: Io): Promise<void> {
  const { targets, skipped } = await gatewayTargets(ref, flags, io);
  await showBudgets(targets, skipped, flags, io);
}

/** Asks every target (the proxies of one Gateway), closes them, prints the merged budgets. */
export async function showBudgets(targets: readonly Target[], skipped: number, flags: BudgetsFlags, io: Io): Promise<void> {
  const path = budgetsPath(flags);
  let results: PromiseSettledResult<BudgetsAnswer>[];
  try {
    results = await Promise.allSettled(targets.map((t) => ask(t, path)));
  } finally {
    await Promise.all(targets.map((t) => t.close()));
  }
  const answered: { proxy: string; answer: BudgetsAnswer }[] = [];
  const missing: { proxy: string; error: string }[] = [];
  results.forEach((r, i) => {
    const proxy = targets[i]!.description;
    if (r.status === 'fulfilled') answered.push({ proxy, answer: r.value });
    else missing.push({ proxy, error: r.reason instanceof GwctlError ? r.reason.message : describe(r.reason) });
  });
  // Nothing answered: the first failure is the command's (its exit code says which kind), the others are said before it.
  for (const m of answered.length ? missing : missing.slice(1)) io.stderr.write(`gwctl: warning: ${m.error}; its budgets are not included\n`);
  if (!answered.length) throw (results[0] as PromiseRejectedResult).reason;
  if (skipped) io.stderr.write(`gwctl: warning: ${skipped} more Ready proxies not asked (at most ${targets.length})\n`);
  // A proxy on several threads whose thread did not answer in time: the global answers that thread got are not in its answer.
  for (const a of answered) io.stderr.write(missingWorkerWarnings(a.proxy, a.answer.missingWorkers ?? [], 'the global answers it got'));
  const rows = mergeBudgets(answered);
  const limit = flags.limit ?? 100;
  const shown = rows.slice(0, limit);
  const output = flags.output ?? 'table';
  if (output === 'json' || output === 'yaml') {
    const doc = { proxies: answered.map((a) => ({ proxy: a.proxy, version: a.answer.version, total: a.answer.total, ...(a.answer.missingWorkers ? { missingWorkers: a.answer.missingWorkers } : {}) })), missing, budgets: shown };
    write(io.stdout, output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : yaml().stringify(doc));
    return;
  }
  write(io.stdout, render(shown, output === 'wide'));
}
