// The per-request trace (interface spec §2.1-2.4, §6): one JSON object per event. The schema
// is what the proxy emits and what `gwctl trace --raw` consumers can validate against.
import { Type, type Static } from '@sinclair/typebox';
import { AUTH_KINDS, AUTH_PASS_REASONS, AUTH_REASONS } from '../auth/fields.js';
import { Enum } from './common.js';
import { TransformationState } from '../transformation/state.js';

export const EFFECTIVE_POLICY_KEYS = [
  'localRateLimit',
  'remoteRateLimit',
  'authorization',
  'jwt',
  'oidc',
  'basicAuth',
  'apiKey',
  'extAuthz',
  'extProc',
  'transformation',
  'csrf',
  'directResponse',
  'requestHeaderModifier',
  'responseHeaderModifier',
  'requestRedirect',
  'urlRewrite',
  'cors',
] as const;
export type EffectivePolicyKey = (typeof EFFECTIVE_POLICY_KEYS)[number];

export const REQUEST_STAGES = ['initial request', 'gateway policies', 'route policies', 'final request'] as const;
export const RESPONSE_STAGES = ['backend response ready', 'final response'] as const;

const Headers = Type.Record(Type.String(), Type.String(), { description: 'Header name (lower case) to value; credentials are "[redacted]".' });

const Env = Type.Object(
  { podName: Type.String(), namespace: Type.String(), gateway: Type.String() },
  { additionalProperties: false },
);

export const RequestInfo = Type.Object(
  {
    method: Type.String(),
    uri: Type.String(),
    path: Type.String(),
    pathAndQuery: Type.String(),
    host: Type.String(),
    scheme: Type.String(),
    version: Type.String(),
    headers: Headers,
    startTime: Type.String({ description: 'ISO 8601 UTC with fractional seconds.' }),
  },
  { additionalProperties: false },
);

const Source = Type.Object(
  { address: Type.String(), rawAddress: Type.String(), port: Type.Integer(), rawPort: Type.Integer() },
  { additionalProperties: false },
);

const Backend = Type.Object({ name: Type.String(), type: Type.String(), protocol: Type.String() }, { additionalProperties: false });

/**
 * What the authentication and authorization checks of the route decided (docs/authentication.md,
 * "What an operator sees"): on the `route policies` and `final request` snapshots of a route
 * that has checks. Never a credential: a consumer shows as its name, group and the id of the
 * credential (an API key's digest prefix, a JWT provider).
 */
export const AuthState = Type.Object(
  {
    consumer: Type.Union([
      Type.Null(),
      Type.Object(
        {
          name: Type.String(),
          group: Type.Union([Type.String(), Type.Null()]),
          via: Enum(['apiKey', 'basicAuth', 'jwt', 'oidc'], 'The kind that established the consumer.'),
          credentialId: Type.String({ description: 'An API key\'s digest prefix, a JWT provider\'s name; never the credential.' }),
        },
        { additionalProperties: false },
      ),
    ], { description: 'Who is calling; null when no authentication kind established it.' }),
    checks: Type.Array(
      Type.Object(
        {
          kind: Enum(AUTH_KINDS, 'The kind of the check.'),
          result: Enum(['allow', 'deny'], 'What it decided.'),
          reason: Enum([...AUTH_PASS_REASONS, ...AUTH_REASONS], 'allowed, or why it refused (the metric label).'),
          note: Type.Union([Type.String(), Type.Null()], { description: 'What decided or what was wrong (a rule, a provider); never a credential.' }),
        },
        { additionalProperties: false },
      ),
      { description: 'The checks that ran, in order; a refusal is the last.' },
    ),
  },
  { additionalProperties: false },
);
export type AuthState = Static<typeof AuthState>;

const Names = Type.Array(Type.String());
const NullableString = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

/**
 * What the handshake of the request's connection established about a client certificate, on
 * listeners that check them (docs/security.md, "Client certificates"): never the certificate.
 */
export const ClientCertificateState = Type.Object(
  {
    verified: Type.Boolean({ description: 'It chains to the listener\'s CAs and is within its validity period: only then do rules and keyed budgets see it.' }),
    error: NullableString('Why it did not verify (OpenSSL\'s code, e.g. CERT_HAS_EXPIRED, or NO_CERTIFICATE); null when verified.'),
    subject: NullableString('Subject of the certificate presented; null when none was. Unverified: what the client claims.'),
    issuer: NullableString('Its issuer.'),
    dnsSans: Names,
    uriSans: Names,
    notAfter: NullableString('End of its validity, ISO 8601.'),
    fingerprint: NullableString('SHA-256 fingerprint, colon-separated hex.'),
  },
  { additionalProperties: false },
);
export type ClientCertificateState = Static<typeof ClientCertificateState>;

export const RequestState = Type.Object(
  { request: RequestInfo, source: Source, clientCertificate: Type.Optional(ClientCertificateState), backend: Type.Optional(Backend), auth: Type.Optional(AuthState), transformation: Type.Optional(TransformationState), env: Env },
  { additionalProperties: false },
);
export type RequestState = Static<typeof RequestState>;

export const ResponseState = Type.Object(
  { response: Type.Object({ code: Type.Integer(), headers: Headers }, { additionalProperties: false }), env: Env },
  { additionalProperties: false },
);
export type ResponseState = Static<typeof ResponseState>;

/** A policy that applies: its settings and the level it was attached at. */
export const PolicyAttachment = Type.Object(
  { source: Enum(['gateway', 'route'], 'Where the policy is attached.'), config: Type.Unknown() },
  { additionalProperties: false },
);
export type PolicyAttachment = Static<typeof PolicyAttachment>;

export const EffectivePolicy = Type.Object(
  Object.fromEntries(EFFECTIVE_POLICY_KEYS.map((k) => [k, Type.Union([Type.Null(), Type.Array(PolicyAttachment, { minItems: 1 })])])) as Record<
    EffectivePolicyKey,
    ReturnType<typeof Type.Union<[ReturnType<typeof Type.Null>, ReturnType<typeof Type.Array<typeof PolicyAttachment>>]>>
  >,
  { additionalProperties: false },
);
export type EffectivePolicy = Record<EffectivePolicyKey, PolicyAttachment[] | null>;

const TransportErrorSchema = Type.Object({ kind: Type.String(), message: Type.String() }, { additionalProperties: false });

export const EXT_PROC_PHASES = ['requestHeaders', 'requestBody', 'responseHeaders', 'responseBody'] as const;
export const EXT_PROC_RESULTS = ['continued', 'mutated', 'immediate', 'failedOpen', 'failedClosed'] as const;

/** One phase of a route's extProc (traffic/ext-proc.ts): what the processor was sent and what came of it. */
export const ExtProcPhaseMessage = Type.Object(
  {
    type: Type.Literal('extProcPhase'),
    phase: Enum(EXT_PROC_PHASES, 'The phase sent.'),
    result: Enum(EXT_PROC_RESULTS, 'continued: nothing changed; mutated: headers or the body changed; immediate: the processor answered the request; failedOpen / failedClosed: the processor failed and the failure mode applied.'),
    messages: Type.Integer({ minimum: 0, description: 'Messages sent in this phase (a STREAMED body: one per chunk).' }),
    headers: Type.Array(Type.String(), { description: 'Names of the headers the processor set or removed.' }),
    bodyBytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Bytes of the body that replaced the original; null when the body was not replaced.' }),
    note: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed, or the immediate answer\'s status; never a header value or body.' }),
  },
  { additionalProperties: false },
);
export type ExtProcPhaseMessage = Static<typeof ExtProcPhaseMessage>;

export const TraceMessage = Type.Union([
  Type.Object({ type: Type.Literal('requestStarted') }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('requestSnapshot'), stage: Enum(REQUEST_STAGES, 'Request stage.'), requestState: RequestState }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal('routeSelection'), selectedRoute: Type.Union([Type.String(), Type.Null()]), evaluatedRoutes: Type.Array(Type.String()) },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal('policySelection'), effectivePolicy: EffectivePolicy }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('backendCallStart'), target: Type.String() }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal('backendCallResult'), status: Type.Integer(), error: Type.Union([Type.Null(), TransportErrorSchema]) },
    { additionalProperties: false },
  ),
  ExtProcPhaseMessage,
  Type.Object({ type: Type.Literal('responseSnapshot'), stage: Enum(RESPONSE_STAGES, 'Response stage.'), requestState: ResponseState }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('requestFinished') }, { additionalProperties: false }),
]);
export type TraceMessage = Static<typeof TraceMessage>;

export const TraceEvent = Type.Object(
  {
    eventStart: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Microseconds since the request was accepted; set on backendCallResult.' }),
    eventEnd: Type.Integer({ minimum: 0, description: 'Microseconds since the request was accepted; non-decreasing.' }),
    severity: Enum(['info', 'warn', 'error'], 'info; warn for 4xx and error for 5xx or transport errors.'),
    message: TraceMessage,
  },
  { additionalProperties: false },
);
export type TraceEvent = Static<typeof TraceEvent>;
