// The `traffic` part of a GatewayPolicy spec (and of the standalone config's `policies`).
// Rate limits, the authentication kinds (auth/), cors, csrf and directResponse (traffic/);
// other policy kinds are sibling fields.
//
// Rules a JSON schema cannot say well (exactly one of tokens/requests, burst only with
// requests) are written once as `x-kubernetes-validations` CEL rules: the API server enforces
// them on GatewayPolicy objects, and validate.ts enforces the same rules on files.
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, HEADER_NAME_PATTERN, NO_CONTROL_PATTERN, PositiveInt } from './common.js';
import { RateLimitService } from './outbound-ref.js';
import { AUTH_TRAFFIC_FIELDS } from '../auth/fields.js';
import { TransformationConfig } from '../transformation/transformation.js';
import { CorsConfig } from '../traffic/cors.js';
import { CsrfConfig } from '../traffic/csrf.js';
import { DirectResponseConfig } from '../traffic/direct-response.js';
import { ExtProcConfig } from '../traffic/ext-proc.js';
import { DescriptorOverrides, LimitName, LocalOverrides, MAX_OVERRIDE_LIMIT } from './budget-overrides.js';
import { FailoverPolicy } from '../resilience/failover.js';

export { BackendRef, RateLimitService } from './outbound-ref.js';

export const RATE_LIMIT_UNITS = ['Seconds', 'Minutes', 'Hours', 'Days', 'Months'] as const;
export type RateLimitUnit = (typeof RATE_LIMIT_UNITS)[number];
/**
 * The units a local limit counts in. Months is global only: a local counter lives in the
 * proxy's memory and starts at zero with every restart, which a month's budget would not
 * survive (docs/rate-limiting.md, "Windows").
 */
export const LOCAL_RATE_LIMIT_UNITS = ['Seconds', 'Minutes', 'Hours', 'Days'] as const;
export type LocalRateLimitUnit = (typeof LOCAL_RATE_LIMIT_UNITS)[number];
/** Window lengths. Months is envoyproxy/ratelimit's: a fixed 30 days counted from the epoch, not a calendar month. */
export const UNIT_SECONDS: Record<RateLimitUnit, number> = { Seconds: 1, Minutes: 60, Hours: 3600, Days: 86_400, Months: 30 * 86_400 };

/** Why a local limit cannot count in Months: the message of the schema rule and of the file check. */
export const LOCAL_MONTHS_MESSAGE =
  'Months is not available for a local limit: local counters live in each proxy\'s memory and start again at zero when it restarts, so a monthly budget would reset with every deploy; use Days, or a global limit (its counters live in the rate limit service)';

export const RATE_LIMIT_KEY_TYPES = ['Consumer', 'ConsumerGroup', 'Claim', 'Header', 'ClientCertificate', 'Expression'] as const;
export type RateLimitKeyType = (typeof RATE_LIMIT_KEY_TYPES)[number];
/** The longest claim or header name a key may name. */
export const MAX_KEY_NAME_LENGTH = 256;

export const RateLimitKey = Type.Object(
  {
    type: Enum(
      RATE_LIMIT_KEY_TYPES,
      'What the budget is kept per: Consumer (the authenticated consumer\'s name), ConsumerGroup (its group), Claim (a claim of its JWT, `name`), Header (a request header, `name`; a client chooses its value freely), ClientCertificate (the subject of the client certificate the listener verified) or Expression (a CEL expression over the request and the consumer).',
    ),
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_KEY_NAME_LENGTH,
        pattern: NO_CONTROL_PATTERN,
        description: 'The claim (Claim) or header (Header) whose value is the key. Only with those types.',
        expected: 'a claim or header name without control characters',
      }),
    ),
    expression: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'CEL expression giving the key (Expression only), e.g. consumer.labels["tier"] + "/" + llm.model; same variables as descriptor expressions, plus consumer.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Keeps one budget per value of the key instead of one for all requests. A request without a value (no consumer, the header absent or empty, the expression failing) counts against one shared budget, the empty key.',
    'x-kubernetes-validations': [
      { rule: "(self.type == 'Claim' || self.type == 'Header') == has(self.name)", message: 'name is required with Claim and Header, and not allowed with the other types' },
      { rule: "(self.type == 'Expression') == has(self.expression)", message: 'expression is required with Expression, and not allowed with the other types' },
      { rule: `self.type != 'Header' || !has(self.name) || self.name.matches("${HEADER_NAME_PATTERN.replace(/\\/g, '\\\\')}")`, message: 'a Header key names an HTTP header (letters, digits and !#$%&\'*+-.^_`|~)' },
    ],
  },
);
export type RateLimitKey = Static<typeof RateLimitKey>;

export const MAX_LOCAL_LIMITS = 16;
export const MAX_DESCRIPTORS = 16;
export const MAX_DOMAIN_LENGTH = 253;
/** The domain a GatewayPolicy's global limit sends: `<namespace>/<domain>` (a namespace is at most 63 characters). */
export const MAX_SENT_DOMAIN_LENGTH = 63 + 1 + MAX_DOMAIN_LENGTH;

/** The messages of the override rules, the same from the API server and from a file's check. */
export const OVERRIDES_NEED_BY = 'overrides are only allowed with by: they name values of its key';
export const OVERRIDES_SAME_KIND = 'every override sets the amount the entry sets: requests (and burst) on a requests entry, tokens on a tokens entry';
export const DESCRIPTOR_OVERRIDES_NEED = 'overrides need by (the key whose values they name) and limit (the limit of every other value, and the unit of the overrides)';

export const LocalRateLimit = Type.Object(
  {
    requests: Type.Optional(PositiveInt('Requests allowed per unit (a token bucket per proxy replica). Exactly one of requests or tokens.')),
    tokens: Type.Optional(PositiveInt('LLM tokens (usage.total_tokens) allowed per unit window per proxy replica. Exactly one of requests or tokens.')),
    unit: Enum(RATE_LIMIT_UNITS, 'Length of the window: Seconds, Minutes, Hours or Days (fixed UTC days). Months is refused for local limits (their counters do not survive a restart).'),
    burst: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Extra requests allowed above the base limit (bucket capacity is requests + burst). Only with requests.' }),
    ),
    by: Type.Optional(RateLimitKey),
    overrides: Type.Optional(LocalOverrides),
    name: Type.Optional(LimitName),
  },
  {
    additionalProperties: false,
    description: 'One independent local limit; every entry must pass.',
    'x-kubernetes-validations': [
      { rule: 'has(self.requests) != has(self.tokens)', message: 'exactly one of requests or tokens must be set' },
      { rule: '!has(self.burst) || has(self.requests)', message: 'burst is only allowed with requests' },
      { rule: "self.unit != 'Months'", message: LOCAL_MONTHS_MESSAGE },
      { rule: '!has(self.overrides) || has(self.by)', message: OVERRIDES_NEED_BY },
      { rule: '!has(self.overrides) || self.overrides.all(o, has(o.requests) == has(self.requests))', message: OVERRIDES_SAME_KIND },
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

export const DescriptorLimit = Type.Object(
  {
    requestsPerUnit: Type.Integer({
      minimum: 1,
      maximum: MAX_OVERRIDE_LIMIT,
      description: 'How many per unit: requests for a Requests descriptor, LLM tokens for a Tokens descriptor (Envoy\'s requests_per_unit).',
    }),
    unit: Enum(
      RATE_LIMIT_UNITS,
      'The window: Seconds, Minutes, Hours, Days or Months. envoyproxy/ratelimit counts fixed windows from the Unix epoch: a day is a UTC day, a month is 30 days (not a calendar month).',
    ),
  },
  {
    additionalProperties: false,
    description:
      'The limit of this descriptor, sent with it as the limit override of Envoy\'s rate limit API: the service applies it instead of a limit of its own config (the service still needs a config for the domain).',
  },
);

export const GlobalDescriptor = Type.Object(
  {
    entries: Type.Optional(Type.Array(DescriptorEntry, { minItems: 1, maxItems: 16, description: 'Descriptor entries, in order, after the key\'s entry when `by` is set.' })),
    by: Type.Optional(RateLimitKey),
    limit: Type.Optional(DescriptorLimit),
    overrides: Type.Optional(DescriptorOverrides),
    name: Type.Optional(LimitName),
    unit: Enum(['Requests', 'Tokens'], 'Requests: charged 1 before the call. Tokens: checked before the call, charged with the response usage after it.'),
  },
  {
    additionalProperties: false,
    description: 'A descriptor sent to the rate limit service. With `by`, its first entry is the key (see docs/rate-limiting.md for the entry names).',
    'x-kubernetes-validations': [
      { rule: 'has(self.entries) || has(self.by)', message: 'set entries, by, or both' },
      { rule: '!has(self.overrides) || (has(self.by) && has(self.limit))', message: DESCRIPTOR_OVERRIDES_NEED },
    ],
  },
);
export type GlobalDescriptor = Static<typeof GlobalDescriptor>;

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
    tokenReservation: Type.Optional(
      Enum(
        ['Estimate', 'None'],
        "How Tokens descriptors are charged. Estimate (the default): each request's reservation (prompt estimate plus max_tokens) at admission, settled to its usage when it ends; requests in flight on every replica count against each other. None: checked at admission, the usage charged after the response; requests in flight do not see each other's usage.",
      ),
    ),
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
    transformation: Type.Optional(TransformationConfig),
    cors: Type.Optional(CorsConfig),
    csrf: Type.Optional(CsrfConfig),
    directResponse: Type.Optional(DirectResponseConfig),
    extProc: Type.Optional(ExtProcConfig),
  },
  { additionalProperties: false, description: 'Policies applied to the traffic of the target.' },
);
export type TrafficPolicy = Static<typeof TrafficPolicy>;

/** `policies` of a standalone listener or route: a GatewayPolicy spec without targetRefs. */
export const PolicySet = Type.Object(
  { traffic: Type.Optional(TrafficPolicy) },
  { additionalProperties: false, description: 'Policies attached here; same shape as GatewayPolicy.spec without targetRefs and failover (a standalone route\'s backends carry their priority).' },
);
export type PolicySet = Static<typeof PolicySet>;

export const PolicyTargetRef = Type.Object(
  {
    group: Enum(['gateway.networking.k8s.io'], 'API group of the target: gateway.networking.k8s.io.'),
    kind: Enum(['Gateway', 'HTTPRoute', 'GRPCRoute'], 'Gateway (every route of the gateway), HTTPRoute or GRPCRoute (that route).'),
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Name of the target, in the policy namespace.' }),
    sectionName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
        description: 'A section of the target: a listener name of a Gateway, or a rule name (rules[].name) of an HTTPRoute or a GRPCRoute. The policy then applies to that section only, and takes precedence there over a policy on the whole target.',
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
    failover: Type.Optional(FailoverPolicy),
  },
  { additionalProperties: false, description: 'What the policy applies and where.' },
);
export type GatewayPolicySpec = Static<typeof GatewayPolicySpec>;
