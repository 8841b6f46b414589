// GET /budgets: the budgets of the keyed rate limits, per key, most used first (docs/rate-limiting.md,
// "Runtime view"). Query: ?limit= (rows, 1 to 1000, default 100), ?key=, ?scope=, ?by=, ?source=
// narrow it; each at most once, a bad one is a 400 naming it. `total` counts the rows that matched
// before ?limit= cut them. The service's last answers are each thread's: the view merges every
// thread's (../thread-views.ts); the local budgets are the process's already (shared memory).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { rejectUnknownQuery, replyError, single } from '@tollgate/kit';
import { ERRORS } from '../../errors.js';
import { budgetRows, byUse, GLOBAL_SOURCE, LOCAL_SOURCE, type BudgetRow } from '../budgets.js';
import type { AdminContext } from '../context.js';
import { gather, withMissing } from '../thread-views.js';
import { latestAnswers } from '../../ratelimit/global/answers.js';

export const DEFAULT_BUDGET_ROWS = 100;
export const MAX_BUDGET_ROWS = 1000;
/** Longest ?key= (a key value is at most 128 characters; a redacted one 42) and ?scope= (a route or `Gateway ns/name`). */
const MAX_FILTER_LENGTH = 512;
const BY = /^(consumer|consumer_group|key|claim\.[^\s]+|header\.[^\s]+)$/;
const SOURCES: Record<string, BudgetRow['source']> = { local: LOCAL_SOURCE, global: GLOBAL_SOURCE };

interface Query {
  readonly limit: number;
  readonly key?: string;
  readonly scope?: string;
  readonly by?: string;
  readonly source?: BudgetRow['source'];
}

type Problem = { readonly key: string; readonly problem: string; readonly example: string; readonly fallback: string };

/** The query, or what is wrong with its first bad parameter. */
function parseQuery(raw: Record<string, unknown>): Query | Problem {
  const text = (name: keyof Omit<Query, 'limit'>, example: string, fallback: string): string | undefined | Problem => {
    const v = single(raw[name]);
    if (v === undefined) return undefined;
    if (v === null) return { key: name, problem: 'is given more than once', example, fallback };
    if (v === '' || v.length > MAX_FILTER_LENGTH) return { key: name, problem: `must be non-empty and at most ${MAX_FILTER_LENGTH} characters`, example, fallback };
    return v;
  };
  let limit = DEFAULT_BUDGET_ROWS;
  const l = single(raw.limit);
  if (l !== undefined) {
    const n = l === null ? NaN : /^[0-9]{1,4}$/.test(l) ? Number(l) : NaN;
    if (!(n >= 1 && n <= MAX_BUDGET_ROWS)) return { key: 'limit', problem: `must be a whole number from 1 to ${MAX_BUDGET_ROWS}, given once`, example: '20', fallback: `the ${DEFAULT_BUDGET_ROWS} most used` };
    limit = n;
  }
  const key = text('key', 'alice', 'every key');
  const scope = text('scope', 'main/chat', 'every route and listener');
  const by = text('by', 'consumer', 'every kind of key');
  const source = text('source', 'local', 'both');
  for (const v of [key, scope, by, source]) if (typeof v === 'object') return v;
  if (typeof by === 'string' && !BY.test(by)) return { key: 'by', problem: 'must be consumer, consumer_group, claim.<name>, header.<name> or key', example: 'consumer', fallback: 'every kind of key' };
  if (typeof source === 'string' && !Object.hasOwn(SOURCES, source)) return { key: 'source', problem: 'must be local or global', example: 'local', fallback: 'both' };
  return { limit, key: key as string | undefined, scope: scope as string | undefined, by: by as string | undefined, source: source === undefined ? undefined : SOURCES[source as string] };
}

function matches(q: Query, r: BudgetRow): boolean {
  return (q.key === undefined || r.key === q.key) && (q.scope === undefined || r.scope === q.scope) && (q.by === undefined || r.by === q.by) && (q.source === undefined || r.source === q.source);
}

export function budgetsRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get(
    '/budgets',
    { config: { index: 'budgets of the keyed rate limits per key, most used first (JSON); ?limit=, ?key=, ?scope=, ?by=, ?source=local|global narrow it' } },
    async (request, reply: FastifyReply) => {
      if (rejectUnknownQuery(request.query, ['limit', 'key', 'scope', 'by', 'source'], reply)) return reply;
      const q = parseQuery(request.query as Record<string, unknown>);
      if ('problem' in q) return replyError(reply, ERRORS.budgetsQuery, { ...q });
      const rt = ctx.runtime;
      if (!rt.hasConfig) return reply.code(503).type('application/json; charset=utf-8').send(JSON.stringify({ error: 'no config loaded yet' }, null, 2));
      const answers = await gather(ctx, 'globalAnswers');
      const rows = budgetRows({ keyed: rt.limiters.keyedEntries(), answers: latestAnswers(answers.parts.map((p) => p.value)), credentials: rt.current.credentials, now: rt.clock() }).filter((r) => matches(q, r));
      rows.sort(byUse);
      const body = withMissing({ version: rt.current.ir.version, total: rows.length, shown: Math.min(rows.length, q.limit), budgets: rows.slice(0, q.limit) }, answers);
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(body, null, 2));
    },
  );
}
