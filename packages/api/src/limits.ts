// What one request may make a config's expressions cost: the bounds on regular expressions
// (route matches, CEL's matches()) and on CEL expressions (rate limit descriptors, trace
// filters), with their defaults. The config source decides them (a standalone config's
// `config.regex` and `config.cel`; the controller's flags), validates every expression
// against them, and writes them into the snapshot when they differ from the defaults, so a
// proxy applies exactly the bounds its snapshot was checked with. docs/security.md lists them.
import { Type, type Static } from '@sinclair/typebox';

const bound = (minimum: number, maximum: number, description: string) => Type.Integer({ minimum, maximum, description });

export const RegexLimitsSchema = Type.Object(
  {
    maxPatternLength: bound(1, 65_536, 'Longest pattern, in characters. Default 1024.'),
    maxProgramSize: bound(8, 100_000, 'Most instructions a compiled pattern may have (as Envoy\'s max_program_size); a match costs up to input length × program size. Default 200.'),
    maxPerRoute: bound(1, 4096, 'Most RegularExpression matches (paths, headers and query parameters together) one route may hold. Default 16.'),
    maxInputLength: bound(1, 1_048_576, 'Longest path, header value or query parameter value a route\'s pattern is run on; a longer one does not match. Default 2048.'),
  },
  { additionalProperties: false, description: 'Bounds on RE2 regular expressions.' },
);
export type RegexLimits = Static<typeof RegexLimitsSchema>;

export const CelLimitsSchema = Type.Object(
  {
    maxCost: bound(1, 100_000_000, 'Largest estimated cost of the CEL expressions one policy evaluates per request, in cost units (about one evaluation step each). Default 10000.'),
    maxHeaders: bound(1, 10_000, 'Most request headers an expression that reads request.headers assumes; a request with more is refused (431) where such an expression runs. Default 100.'),
    maxHeaderLength: bound(1, 1_048_576, 'Longest header name or value, in characters, an expression that reads request.headers assumes; a longer one is refused (431). Default 16384.'),
    maxPathLength: bound(1, 1_048_576, 'Longest request.path, in characters, an expression that reads it assumes; a longer one is refused (431). Default 4096.'),
  },
  { additionalProperties: false, description: 'Bounds on CEL expressions and the request inputs they read.' },
);
export type CelLimits = Static<typeof CelLimitsSchema>;

export const EvaluationLimitsSchema = Type.Object(
  { regex: RegexLimitsSchema, cel: CelLimitsSchema },
  { additionalProperties: false, description: 'Bounds the expressions of the snapshot were validated with; left out: the defaults.' },
);
export type EvaluationLimits = Static<typeof EvaluationLimitsSchema>;

export const DEFAULT_REGEX_LIMITS: RegexLimits = Object.freeze({ maxPatternLength: 1024, maxProgramSize: 200, maxPerRoute: 16, maxInputLength: 2048 });
export const DEFAULT_CEL_LIMITS: CelLimits = Object.freeze({ maxCost: 10_000, maxHeaders: 100, maxHeaderLength: 16_384, maxPathLength: 4096 });
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
