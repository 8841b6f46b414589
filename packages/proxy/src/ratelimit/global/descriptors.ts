// Descriptors of a global limit: each entry's CEL expression is compiled once per config
// (through compileCel, the one place every expression goes through: type-checked, its cost
// estimated and within the budget) and evaluated per request into the descriptor's value. As
// in Envoy, a descriptor one of whose entries has no value for this request (the expression
// errors, e.g. a missing header, or yields null, an empty string or a non-scalar) is not sent.
// A keyed descriptor (`by`) always has its key: its first entry, the empty key when the request
// has no value for it (../key.ts), so leaving the key out is not a way around its limit.
// Its limit override is the key value's own (`overrides`) or else the descriptor's `limit`, chosen
// per request and sent with it: the service's counters are keyed by the entries, not the limit,
// so a changed limit applies to what the window has counted.
import { bindRequest, compileCel, readsOf, type Bound, type CelProgram, type EvaluationLimits, type GlobalRateLimitIR, type InputName, type RateLimitUnit } from '@tollgate/api';
import type { RequestFacts } from '../facts.js';
import { compileKey, keyEntryName, keyValue, RateLimitKeyError, type CompiledKey } from '../key.js';
import type { RlsLimit } from './proto.js';

export interface CompiledEntry {
  readonly name: string;
  readonly program: CelProgram;
}

export interface CompiledDescriptor {
  readonly index: number;
  readonly unit: 'Requests' | 'Tokens';
  /** The key and the name of its entry, sent first; null for an unkeyed descriptor. */
  readonly key: { readonly name: string; readonly compiled: CompiledKey } | null;
  readonly entries: readonly CompiledEntry[];
  /** The limit override sent with it; null: the service's own config decides. */
  readonly limit: RlsLimit | null;
  /** The limits of particular key values, sent instead of `limit` for them. */
  readonly overrides: ReadonlyMap<string, RlsLimit>;
  /** x-ratelimit-policy when it is the tightest: its name or place, and its key type. */
  readonly policy: string;
}

const RLS_UNIT: Record<RateLimitUnit, RlsLimit['unit']> = { Seconds: 'SECOND', Minutes: 'MINUTE', Hours: 'HOUR', Days: 'DAY', Months: 'MONTH' };

export interface CompiledDescriptors {
  readonly list: readonly CompiledDescriptor[];
  /** Every request input the expressions read: the ones a request must keep within their bounds. */
  readonly reads: ReadonlySet<InputName>;
  readonly limits: EvaluationLimits;
}

/** A descriptor's expression is not usable (or the descriptors are over the budget together); the message names it. */
export class GlobalRateLimitConfigError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GlobalRateLimitConfigError';
  }
}

export function compileDescriptors(descriptors: GlobalRateLimitIR['descriptors'], limits: EvaluationLimits): CompiledDescriptors {
  let total = 0;
  const list = descriptors.map((d, index): CompiledDescriptor => {
    let key: CompiledDescriptor['key'] = null;
    if (d.by) {
      try {
        key = { name: keyEntryName(d.by), compiled: compileKey(d.by, limits, `rateLimit.global.descriptors[${index}].by`) };
      } catch (err) {
        if (err instanceof RateLimitKeyError) throw new GlobalRateLimitConfigError(err.message, { cause: err });
        throw err;
      }
      total += key.compiled.program?.cost ?? 0;
    }
    return {
      index,
      unit: d.unit,
      key,
      entries: d.entries.map((e, j) => {
        const c = compileCel(e.expression, 'descriptor', limits);
        if (!c.ok) throw new GlobalRateLimitConfigError(`rateLimit.global.descriptors[${index}].entries[${j}] (${e.name}): expression ${JSON.stringify(e.expression)}: ${c.problem}`);
        total += c.value.cost;
        return { name: e.name, program: c.value };
      }),
      limit: d.limit ? { requests_per_unit: d.limit.requestsPerUnit, unit: RLS_UNIT[d.limit.unit] } : null,
      // Validation refuses overrides without a limit (their unit is its unit).
      overrides: new Map(d.limit ? (d.overrides ?? []).map((o) => [o.key, { requests_per_unit: o.requestsPerUnit, unit: RLS_UNIT[d.limit!.unit] }] as const) : []),
      policy: `${d.name ?? `global.descriptors[${index}]`}${d.by ? `;by=${d.by.type}` : ''}`,
    };
  });
  // Validation refuses this before a snapshot is made; a snapshot that skipped it fails here.
  if (!(total <= limits.cel.maxCost)) {
    throw new GlobalRateLimitConfigError(`rateLimit.global.descriptors: estimated cost ${total} together, more than the budget of ${limits.cel.maxCost} (cel.maxCost)`);
  }
  const programs = list.flatMap((d) => [...d.entries.map((e) => e.program), ...(d.key?.compiled.program ? [d.key.compiled.program] : [])]);
  return { list, reads: readsOf(programs), limits };
}

/** The request's CEL variables, or the input over its declared bound (the request is then refused, unevaluated). */
export function celBindings(facts: RequestFacts, compiled: CompiledDescriptors): Bound {
  return bindRequest(facts, compiled.reads, compiled.limits.cel);
}

/** A CEL result as a descriptor value; null when it is not a non-empty scalar. */
function scalarValue(v: unknown): string | null {
  if (typeof v === 'string') return v === '' ? null : v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : null;
  return null;
}

export type Evaluated =
  /** `limit`: the override to send for this request's key (null: none). */
  | { readonly ok: true; readonly entries: { key: string; value: string }[]; readonly limit: RlsLimit | null }
  | { readonly ok: false; readonly entry: string; readonly reason: string };

export function evaluateDescriptor(d: CompiledDescriptor, facts: RequestFacts, bindings: Extract<Bound, { ok: true }>['bindings']): Evaluated {
  const key = d.key ? keyValue(d.key.compiled, facts, bindings) : null;
  const entries: { key: string; value: string }[] = d.key && key !== null ? [{ key: d.key.name, value: key }] : [];
  for (const e of d.entries) {
    const result = e.program.run(bindings);
    if (!result.ok) return { ok: false, entry: e.name, reason: result.reason };
    const value = scalarValue(result.value);
    if (value === null) return { ok: false, entry: e.name, reason: 'not a non-empty string, number or bool' };
    entries.push({ key: e.name, value });
  }
  return { ok: true, entries, limit: (key !== null ? d.overrides.get(key) : undefined) ?? d.limit };
}
