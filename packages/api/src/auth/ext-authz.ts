// extAuthz: an external authorization service decides, over Envoy's protocol: gRPC
// (envoy.service.auth.v3.Authorization/Check) or HTTP (the request's method, path and chosen
// headers sent to the service; 2xx allows, anything else is the answer the client gets).
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, HeaderName } from '../schema/common.js';
import { ServiceAddress } from '../schema/outbound-ref.js';
import { Obj, Nullable, NonEmpty, Lit } from '../schema/wire-parts.js';

export const MAX_EXT_AUTHZ_BODY_BYTES = 1024 * 1024;

const HeaderList = (description: string) => Type.Array(HeaderName('A header name.'), { maxItems: 64, description });

export const ExtAuthzConfig = Type.Object(
  {
    service: ServiceAddress('external authorization service'),
    protocol: Type.Optional(Enum(['GRPC', 'HTTP'], 'GRPC (the default): envoy.service.auth.v3.Authorization/Check. HTTP: the request is sent to the service as a bodiless request (with the body when withBody is set); a 2xx answer allows it.')),
    http: Type.Optional(
      Type.Object(
        { pathPrefix: Type.Optional(Type.String({ maxLength: 1024, pattern: '^(/[^\\x00-\\x20\\x7f]*)?$', description: 'Prefixed to the request path in the call to the service; default none.' })) },
        { additionalProperties: false, description: 'Settings of the HTTP protocol.' },
      ),
    ),
    includeRequestHeaders: Type.Optional(HeaderList('Request headers sent to the service; default all of them.')),
    headersToUpstream: Type.Optional(HeaderList('Headers of an allowing answer copied to the forwarded request. gRPC: the OK response\'s headers are always applied; this list is for the HTTP protocol (default none).')),
    headersToClient: Type.Optional(HeaderList('Headers of a denying HTTP answer sent to the client; default all of them. gRPC: the denied response\'s headers.')),
    withBody: Type.Optional(
      Type.Object(
        {
          maxBytes: Type.Integer({ minimum: 1, maximum: MAX_EXT_AUTHZ_BODY_BYTES, description: 'Most bytes of the request body sent.' }),
          allowPartial: Type.Optional(Type.Boolean({ description: 'true: a longer body is cut to maxBytes; false (the default): a longer body is refused with 413.' })),
        },
        { additionalProperties: false, description: 'Send the request body (up to maxBytes) to the service.' },
      ),
    ),
    timeout: Type.Optional(Duration('Time to wait for the service, at most 60s; default 200ms.')),
    failureMode: Type.Optional(Enum(['FailOpen', 'FailClosed'], 'When the service cannot be reached, times out or answers garbage: FailClosed (the default) refuses the request (403); FailOpen lets it through.')),
  },
  { additionalProperties: false, description: 'An external service authorizes each request (Envoy external authorization).' },
);
export type ExtAuthzConfig = Static<typeof ExtAuthzConfig>;

export interface ExtAuthzIR {
  /** `<host>:<port>` of the service. */
  readonly service: string;
  readonly protocol: 'GRPC' | 'HTTP';
  readonly pathPrefix: string;
  /** Lower case; null: every header. */
  readonly includeRequestHeaders: readonly string[] | null;
  readonly headersToUpstream: readonly string[];
  /** Lower case; null: every header. */
  readonly headersToClient: readonly string[] | null;
  readonly withBody: { readonly maxBytes: number; readonly allowPartial: boolean } | null;
  readonly timeoutMs: number;
  readonly failureMode: 'FailOpen' | 'FailClosed';
}

const Names = Type.Array(NonEmpty('Header name, lower case.', 256), { maxItems: 64 });
export const ExtAuthzWire = Obj(
  {
    service: NonEmpty('`<host>:<port>`.', 400),
    protocol: Type.Union([Lit('GRPC'), Lit('HTTP')]),
    pathPrefix: Type.String({ maxLength: 1024 }),
    includeRequestHeaders: Nullable(Names),
    headersToUpstream: Names,
    headersToClient: Nullable(Names),
    withBody: Nullable(Obj({ maxBytes: Type.Integer({ minimum: 1, maximum: MAX_EXT_AUTHZ_BODY_BYTES }), allowPartial: Type.Boolean() }, 'Body sent.')),
    timeoutMs: Type.Integer({ minimum: 1 }),
    failureMode: Type.Union([Lit('FailOpen'), Lit('FailClosed')]),
  },
  'External authorization.',
);
