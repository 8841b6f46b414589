// The `traffic` part of a GatewayPolicy spec (and of the standalone config's `policies`).
// Rate limits and the authentication kinds (auth/); other policy kinds are sibling fields.
//
// Rules a JSON schema cannot say well (exactly one of tokens/requests, burst only with
// requests) are written once as `x-kubernetes-validations` CEL rules: the API server enforces
// them on GatewayPolicy objects, and validate.ts enforces the same rules on files.
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, PositiveInt } from './common.js';
import { RateLimitService } from './outbound-ref.js';
import { AUTH_TRAFFIC_FIELDS } from '../auth/fields.js';

export { BackendRef, RateLimitService } from './outbound-ref.js';

export const RATE_LIMIT_UNITS = ['Seconds', 'Minutes', 'Hours'] as const;
export type RateLimitUnit = (typeof RATE_LIMIT_UNITS)[number];
export const UNIT_SECONDS: Record<RateLimitUnit, number> = { Seconds: 1, Minutes: 60, Hours: 3600 };

export const MAX_LOCAL_LIMITS = 16;
export const MAX_DESCRIPTORS = 16;
export const MAX_DOMAIN_LENGTH = 253;
/** The domain a GatewayPolicy's global limit sends: `<namespace>/<domain>` (a namespace is at most 63 characters). */
export const MAX_SENT_DOMAIN_LENGTH = 63 + 1 + MAX_DOMAIN_LENGTH;

export const LocalRateLimit = Type.Object(
  {
    requests: Type.Optional(PositiveInt('Requests allowed per unit (a token bucket per proxy replica). Exactly one of requests or tokens.')),
    tokens: Type.Optional(PositiveInt('LLM tokens (usage.total_tokens) allowed per unit window per proxy replica. Exactly one of requests or tokens.')),
    unit: Enum(RATE_LIMIT_UNITS, 'Length of the window: Seconds, Minutes or Hours.'),
    burst: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Extra requests allowed above the base limit (bucket capacity is requests + burst). Only with requests.' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'One independent local limit; every entry must pass.',
    'x-kubernetes-validations': [
      { rule: 'has(self.requests) != has(self.tokens)', message: 'exactly one of requests or tokens must be set' },
      { rule: '!has(self.burst) || has(self.requests)', message: 'burst is only allowed with requests' },
    ],
  },
);
export type LocalRateLimit = Static<typeof LocalRateLimit>;

export const DescriptorEntry = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Descriptor key sent to the rate limit service.' }),
    expression: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'CEL expression over the request giving the descriptor value, e.g. request.headers["x-user-id"] or llm.model.',
    }),
  },
  { additionalProperties: false, description: 'One key/value of a rate limit descriptor.' },
);

export const GlobalDescriptor = Type.Object(
  {
    entries: Type.Array(DescriptorEntry, { minItems: 1, maxItems: 16, description: 'Descriptor entries, in order.' }),
    unit: Enum(['Requests', 'Tokens'], 'Requests: charged 1 before the call. Tokens: checked before the call, charged with the response usage after it.'),
  },
  { additionalProperties: false, description: 'A descriptor sent to the rate limit service.' },
);

export const GlobalRateLimit = Type.Object(
  {
    service: RateLimitService,
    domain: Type.String({
      minLength: 1,
      maxLength: MAX_DOMAIN_LENGTH,
      description:
        'Rate limit service domain. From a GatewayPolicy it is sent as <policy namespace>/<domain>, so policies of different namespaces never share limits or counters; from a standalone config, as written.',
    }),
    descriptors: Type.Array(GlobalDescriptor, { minItems: 1, maxItems: MAX_DESCRIPTORS, description: 'Descriptors sent with each request.' }),
    failureMode: Type.Optional(
      Enum(['FailOpen', 'FailClosed'], 'When the service cannot be reached or times out: FailOpen (the default) lets the request through; FailClosed rejects it.'),
    ),
    timeout: Type.Optional(Duration('Time to wait for the rate limit service; default 100ms; more than 0s and at most 596h.')),
  },
  { additionalProperties: false, description: 'Limits shared by every replica through an external rate limit service.' },
);
export type GlobalRateLimit = Static<typeof GlobalRateLimit>;

export const RateLimitPolicy = Type.Object(
  {
    local: Type.Optional(Type.Array(LocalRateLimit, { minItems: 1, maxItems: MAX_LOCAL_LIMITS, description: 'Local limits, counted per proxy replica.' })),
    global: Type.Optional(GlobalRateLimit),
  },
  { additionalProperties: false, description: 'Request and token rate limits.' },
);

export const TrafficPolicy = Type.Object(
  {
    rateLimit: Type.Optional(RateLimitPolicy),
    ...AUTH_TRAFFIC_FIELDS,
  },
  { additionalProperties: false, description: 'Policies applied to the traffic of the target.' },
);
export type TrafficPolicy = Static<typeof TrafficPolicy>;

/** `policies` of a standalone listener or route: a GatewayPolicy spec without targetRefs. */
export const PolicySet = Type.Object(
  { traffic: Type.Optional(TrafficPolicy) },
  { additionalProperties: false, description: 'Policies attached here; same shape as GatewayPolicy.spec without targetRefs.' },
);
export type PolicySet = Static<typeof PolicySet>;

export const PolicyTargetRef = Type.Object(
  {
    group: Enum(['gateway.networking.k8s.io'], 'API group of the target: gateway.networking.k8s.io.'),
    kind: Enum(['Gateway', 'HTTPRoute'], 'Gateway (every route of the gateway) or HTTPRoute (that route).'),
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Name of the target, in the policy namespace.' }),
    sectionName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
        description: 'A section of the target: a listener name of a Gateway, or a rule name of an HTTPRoute. The policy then applies to that section only, and takes precedence there over a policy on the whole target.',
        expected: 'a listener or rule name (lower-case letters, digits, "-" and ".")',
      }),
    ),
  },
  { additionalProperties: false, description: 'A resource the policy attaches to, or one section of it.' },
);

export const GatewayPolicySpec = Type.Object(
  {
    targetRefs: Type.Array(PolicyTargetRef, { minItems: 1, maxItems: 16, description: 'Targets of the policy.' }),
    traffic: Type.Optional(TrafficPolicy),
  },
  { additionalProperties: false, description: 'What the policy applies and where.' },
);
export type GatewayPolicySpec = Static<typeof GatewayPolicySpec>;
