// What one request may make a config's expressions cost: the bounds on regular expressions
// (route matches, CEL's matches()) and on CEL expressions (rate limit descriptors, trace
// filters), with their defaults. The config source decides them (a standalone config's
// `config.regex` and `config.cel`; the controller's flags), validates every expression
// against them, and writes them into the snapshot when they differ from the defaults, so a
// proxy applies exactly the bounds its snapshot was checked with. docs/security.md lists them.
import { Type, type Static, type TInteger } from '@sinclair/typebox';

/** One bound, stated once: its range, its default, and what it bounds. */
interface Bound {
  readonly range: readonly [minimum: number, maximum: number];
  readonly default: number;
  readonly what: string;
}

/** The schema of a group of bounds (each an integer in its range, described with its default) and its defaults. */
function boundGroup<K extends string>(description: string, bounds: Record<K, Bound>) {
  const properties = {} as Record<K, TInteger>;
  const defaults = {} as Record<K, number>;
  for (const [key, b] of Object.entries(bounds) as [K, Bound][]) {
    properties[key] = Type.Integer({ minimum: b.range[0], maximum: b.range[1], description: `${b.what} Default ${b.default}.` });
    defaults[key] = b.default;
  }
  return { schema: Type.Object(properties, { additionalProperties: false, description }), defaults: Object.freeze(defaults) };
}

const regex = boundGroup('Bounds on RE2 regular expressions.', {
  maxPatternLength: { range: [1, 65_536], default: 1024, what: 'Longest pattern, in characters.' },
  maxProgramSize: { range: [8, 100_000], default: 200, what: 'Most instructions a compiled pattern may have (as Envoy\'s max_program_size); a match costs up to input length × program size.' },
  maxPerRoute: { range: [1, 4096], default: 16, what: 'Most RegularExpression matches (paths, headers and query parameters together) one route may hold.' },
  maxInputLength: { range: [1, 1_048_576], default: 2048, what: 'Longest path, header value or query parameter value a route\'s pattern is run on; a longer one does not match.' },
});
const cel = boundGroup('Bounds on CEL expressions and the request inputs they read.', {
  maxCost: { range: [1, 100_000_000], default: 10_000, what: 'Largest estimated cost of the CEL expressions one policy evaluates per request, in cost units (about one evaluation step each).' },
  maxHeaders: { range: [1, 10_000], default: 100, what: 'Most request headers an expression that reads request.headers assumes; a request with more is refused (431) where such an expression runs.' },
  maxHeaderLength: { range: [1, 1_048_576], default: 16_384, what: 'Longest header name or value, in characters, an expression that reads request.headers assumes; a longer one is refused (431).' },
  maxPathLength: { range: [1, 1_048_576], default: 4096, what: 'Longest request.path, in characters, an expression that reads it assumes; a longer one is refused (431).' },
});

export const RegexLimitsSchema = regex.schema;
export type RegexLimits = Static<typeof RegexLimitsSchema>;
export const CelLimitsSchema = cel.schema;
export type CelLimits = Static<typeof CelLimitsSchema>;

export const EvaluationLimitsSchema = Type.Object(
  { regex: RegexLimitsSchema, cel: CelLimitsSchema },
  { additionalProperties: false, description: 'Bounds the expressions of the snapshot were validated with; left out: the defaults.' },
);
export type EvaluationLimits = Static<typeof EvaluationLimitsSchema>;

export const DEFAULT_REGEX_LIMITS: RegexLimits = regex.defaults;
export const DEFAULT_CEL_LIMITS: CelLimits = cel.defaults;
export const DEFAULT_LIMITS: EvaluationLimits = Object.freeze({ regex: DEFAULT_REGEX_LIMITS, cel: DEFAULT_CEL_LIMITS });

/** The bounds with `overrides` applied field by field. */
export function resolveLimits(overrides: { regex?: Partial<RegexLimits>; cel?: Partial<CelLimits> } | undefined): EvaluationLimits {
  if (!overrides?.regex && !overrides?.cel) return DEFAULT_LIMITS;
  return { regex: { ...DEFAULT_REGEX_LIMITS, ...overrides.regex }, cel: { ...DEFAULT_CEL_LIMITS, ...overrides.cel } };
}

/** True when `limits` are the defaults (a snapshot then leaves them out). */
export function isDefaultLimits(limits: EvaluationLimits): boolean {
  const same = <T extends object>(a: T, b: T) => (Object.keys(b) as (keyof T)[]).every((k) => a[k] === b[k]);
  return same(limits.regex, DEFAULT_REGEX_LIMITS) && same(limits.cel, DEFAULT_CEL_LIMITS);
}
