// Gateway API (v1.6.1) shapes for HTTPRouteMatch and HTTPRouteFilter, as the standalone config
// and the ProxySnapshot carry them. Field names, enums, limits and defaults follow the
// HTTPRoute CRD; only the filter types the proxy implements are accepted.
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, HeaderName, HeaderValue, NO_CONTROL_PATTERN, PreciseHostname } from './common.js';
import { CorsFilterConfig } from '../traffic/cors.js';

export const PathMatchType = Enum(
  ['Exact', 'PathPrefix', 'RegularExpression'],
  'How the path is compared: Exact, PathPrefix (on "/"-separated elements) or RegularExpression (the whole path must match).',
);

export const HTTPPathMatch = Type.Object(
  {
    type: Type.Optional(PathMatchType),
    value: Type.Optional(
      Type.String({
        maxLength: 1024,
        pattern: NO_CONTROL_PATTERN,
        description: 'The path to match; absolute (starting with "/") for Exact and PathPrefix; RE2 syntax for RegularExpression. Default "/".',
        expected: 'a path without control characters',
      }),
    ),
  },
  { additionalProperties: false, description: 'Matches the request path. Default: PathPrefix "/".' },
);

const ValueMatchType = Enum(['Exact', 'RegularExpression'], 'Exact (the default) or RegularExpression.');

export const HTTPHeaderMatch = Type.Object(
  {
    type: Type.Optional(ValueMatchType),
    name: HeaderName('Header name, compared case-insensitively.'),
    value: HeaderValue('Value to match; RE2 syntax with type RegularExpression.'),
  },
  { additionalProperties: false, description: 'Matches one request header.' },
);

export const HTTPQueryParamMatch = Type.Object(
  {
    type: Type.Optional(ValueMatchType),
    name: HeaderName('Query parameter name, compared exactly (case-sensitive).'),
    value: Type.String({ minLength: 1, maxLength: 1024, description: 'Value to match; RE2 syntax with type RegularExpression.' }),
  },
  { additionalProperties: false, description: 'Matches one query parameter.' },
);

export const HTTPMethod = Enum(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'], 'HTTP method to match.');

export const HTTPRouteMatch = Type.Object(
  {
    path: Type.Optional(HTTPPathMatch),
    headers: Type.Optional(Type.Array(HTTPHeaderMatch, { maxItems: 16, description: 'Headers that must all match.' })),
    queryParams: Type.Optional(Type.Array(HTTPQueryParamMatch, { maxItems: 16, description: 'Query parameters that must all match.' })),
    method: Type.Optional(HTTPMethod),
  },
  { additionalProperties: false, description: 'A request matches when every condition given here holds.' },
);
export type HTTPRouteMatch = Static<typeof HTTPRouteMatch>;

const HTTPHeader = Type.Object(
  {
    name: HeaderName('Header name.'),
    value: HeaderValue('Header value.'),
  },
  { additionalProperties: false },
);

export const HTTPHeaderFilter = Type.Object(
  {
    set: Type.Optional(Type.Array(HTTPHeader, { maxItems: 16, description: 'Headers to set, replacing any present value.' })),
    add: Type.Optional(Type.Array(HTTPHeader, { maxItems: 16, description: 'Headers to add, appending to any present value.' })),
    remove: Type.Optional(Type.Array(HeaderName('Header to remove.'), { maxItems: 16, description: 'Headers to remove.' })),
  },
  { additionalProperties: false, description: 'Header changes: set, then add, then remove.' },
);
export type HTTPHeaderFilter = Static<typeof HTTPHeaderFilter>;

export const HTTPPathModifier = Type.Object(
  {
    type: Enum(
      ['ReplaceFullPath', 'ReplacePrefixMatch'],
      'ReplaceFullPath replaces the whole path; ReplacePrefixMatch replaces the part matched by a PathPrefix match.',
    ),
    replaceFullPath: Type.Optional(
      Type.String({ maxLength: 1024, pattern: NO_CONTROL_PATTERN, description: 'The new path (with ReplaceFullPath).', expected: 'a path without control characters' }),
    ),
    replacePrefixMatch: Type.Optional(
      Type.String({ maxLength: 1024, pattern: NO_CONTROL_PATTERN, description: 'The new prefix (with ReplacePrefixMatch).', expected: 'a path without control characters' }),
    ),
  },
  { additionalProperties: false, description: 'How to change the path.' },
);
export type HTTPPathModifier = Static<typeof HTTPPathModifier>;

export const HTTPRequestRedirectFilter = Type.Object(
  {
    scheme: Type.Optional(Enum(['http', 'https'], 'Scheme of the Location; default the request scheme.')),
    hostname: Type.Optional(PreciseHostname('Hostname of the Location; default the request host.')),
    path: Type.Optional(HTTPPathModifier),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Port of the Location; default derived from the scheme or the listener.' })),
    statusCode: Type.Optional(Enum([301, 302, 303, 307, 308], 'Redirect status; default 302.')),
  },
  { additionalProperties: false, description: 'Answers with a redirect instead of calling a backend.' },
);
export type HTTPRequestRedirectFilter = Static<typeof HTTPRequestRedirectFilter>;

export const HTTPURLRewriteFilter = Type.Object(
  {
    hostname: Type.Optional(PreciseHostname('Host header sent to the backend.')),
    path: Type.Optional(HTTPPathModifier),
  },
  { additionalProperties: false, description: 'Rewrites the request before it is sent to the backend.' },
);
export type HTTPURLRewriteFilter = Static<typeof HTTPURLRewriteFilter>;

export const FILTER_TYPES = ['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestRedirect', 'URLRewrite', 'CORS'] as const;
export type FilterType = (typeof FILTER_TYPES)[number];

/** The filter field that must be set for each filter type (and only for it). */
export const FILTER_FIELD: Record<FilterType, 'requestHeaderModifier' | 'responseHeaderModifier' | 'requestRedirect' | 'urlRewrite' | 'cors'> = {
  RequestHeaderModifier: 'requestHeaderModifier',
  ResponseHeaderModifier: 'responseHeaderModifier',
  RequestRedirect: 'requestRedirect',
  URLRewrite: 'urlRewrite',
  CORS: 'cors',
};

export const HTTPRouteFilter = Type.Object(
  {
    type: Enum(FILTER_TYPES, 'Filter type; the field of the same name in lower camel case holds its settings.'),
    requestHeaderModifier: Type.Optional(HTTPHeaderFilter),
    responseHeaderModifier: Type.Optional(HTTPHeaderFilter),
    requestRedirect: Type.Optional(HTTPRequestRedirectFilter),
    urlRewrite: Type.Optional(HTTPURLRewriteFilter),
    cors: Type.Optional(CorsFilterConfig),
  },
  { additionalProperties: false, description: 'A Gateway API HTTPRouteFilter.' },
);
export type HTTPRouteFilter = Static<typeof HTTPRouteFilter>;

export const RouteTimeouts = Type.Object(
  {
    request: Type.Optional(
      Duration('Time for the whole exchange, from the request accepted to the last response byte sent; 0s: no timeout. At most 596h.', { allowZero: true }),
    ),
    backendRequest: Type.Optional(
      Duration('Time to wait for the backend to start its response (status and headers); 0s: no timeout. At most 596h and at most request.', { allowZero: true }),
    ),
  },
  { additionalProperties: false, description: 'Gateway API HTTPRouteRule timeouts.' },
);
export type RouteTimeouts = Static<typeof RouteTimeouts>;
