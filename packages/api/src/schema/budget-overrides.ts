// The per-key budgets of a keyed rate limit (`overrides`) and the name a limit is shown under
// (`name`, in the x-ratelimit-policy header). An override names one key value and gives it its
// own amount; every other key value gets the entry's own amount (the default).
//
// Bounded: at most MAX_RATE_LIMIT_OVERRIDES per entry or descriptor, keys no longer than the
// longest key value a limit keeps as is (longer values are hashed: docs/rate-limiting.md), and
// each key once. The API server refuses a repeated key itself (a list-map keyed by `key`,
// naming the index); checkOverrides (../overrides-check.ts) does the same for files.
import { Type } from '@sinclair/typebox';
import { NO_CONTROL_PATTERN, PositiveInt } from './common.js';

/** Longest key value a keyed limit keeps as is; a longer one is replaced by `#` and its SHA-256. */
export const MAX_KEY_VALUE_LENGTH = 128;
/** The most requests_per_unit of Envoy's RateLimitOverride (a uint32). */
export const MAX_OVERRIDE_LIMIT = 4_294_967_295;
/** The most overrides one entry or descriptor may list. */
export const MAX_RATE_LIMIT_OVERRIDES = 1000;
/** The longest `name` of a limit (it is sent in a response header). */
export const MAX_LIMIT_NAME_LENGTH = 63;
export const LIMIT_NAME_PATTERN = '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';
export const LIMIT_NAME_EXPECTED = 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit';

export const LimitName = Type.String({
  minLength: 1,
  maxLength: MAX_LIMIT_NAME_LENGTH,
  pattern: LIMIT_NAME_PATTERN,
  description: 'The name the x-ratelimit-policy header gives this limit when it is the tightest; default <level>.local[<index>] or <level>.global.descriptors[<index>].',
  expected: LIMIT_NAME_EXPECTED,
});

const OverrideKey = Type.String({
  minLength: 0,
  maxLength: MAX_KEY_VALUE_LENGTH,
  pattern: NO_CONTROL_PATTERN,
  description:
    'The key value this budget is for: a consumer name, a group, a claim or header value, the expression\'s value ("" is the budget of requests without a value). At most 128 characters, as a longer value is kept as # and its SHA-256.',
  expected: 'a key value of at most 128 characters without control characters',
});

const LIST_MAP = { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['key'] } as const;

export const LocalOverride = Type.Object(
  {
    key: OverrideKey,
    requests: Type.Optional(PositiveInt('Requests per unit for this key (a requests entry).')),
    tokens: Type.Optional(PositiveInt('LLM tokens per unit for this key (a tokens entry).')),
    burst: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Extra requests for this key above its requests; 0 when not set (not the entry\'s burst). Only with requests.' })),
  },
  {
    additionalProperties: false,
    description: 'The budget of one key value, instead of the entry\'s own (the default for every other key).',
    'x-kubernetes-validations': [
      { rule: 'has(self.requests) != has(self.tokens)', message: 'exactly one of requests or tokens must be set, the same as the entry\'s' },
      { rule: '!has(self.burst) || has(self.requests)', message: 'burst is only allowed with requests' },
    ],
  },
);

export const LocalOverrides = Type.Array(LocalOverride, {
  minItems: 1,
  maxItems: MAX_RATE_LIMIT_OVERRIDES,
  description: 'Budgets of particular key values (only with by); every other key value gets the entry\'s own amount. Each key at most once.',
  ...LIST_MAP,
});

export const DescriptorOverride = Type.Object(
  {
    key: OverrideKey,
    requestsPerUnit: PositiveInt('How many per unit for this key (requests, or LLM tokens for a Tokens descriptor), in the unit of the descriptor\'s limit.', MAX_OVERRIDE_LIMIT),
  },
  { additionalProperties: false, description: 'The limit of one key value, sent as the limit override instead of the descriptor\'s limit.' },
);

export const DescriptorOverrides = Type.Array(DescriptorOverride, {
  minItems: 1,
  maxItems: MAX_RATE_LIMIT_OVERRIDES,
  description: 'Limits of particular key values (needs by and limit); every other key value gets limit. Each key at most once.',
  ...LIST_MAP,
});
