// cors: which other origins' pages may call the route from a browser and read its answers
// (Fetch's CORS protocol). One shape for both ways to set it: the `cors` policy kind and the
// Gateway API's HTTPRoute CORS filter (v1.6.1), field for field, so a filter's block can be
// copied into a policy. The policy refuses one thing the filter allows: every origin (`*`)
// with credentials, which lets any site make credentialed calls and read the answers.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Enum, HEADER_NAME_PATTERN } from '../schema/common.js';
import { Lit, NonEmpty, Obj } from '../schema/wire-parts.js';
import { OriginPattern } from './origin.js';

/** Bounds of one cors setting (the Gateway API's, for the lists). */
export const CORS_BOUNDS = {
  maxOrigins: 64,
  maxMethods: 9,
  maxHeaders: 64,
  /** The policy's maxAge: browsers cap it lower anyway (Chromium 2 h, Firefox 24 h). */
  maxAgeSeconds: 86_400,
  /** The filter's maxAge (an int32 in the Gateway API). */
  maxFilterAgeSeconds: 2_147_483_647,
} as const;

/** maxAge when unset, as the Gateway API says. */
export const DEFAULT_CORS_MAX_AGE = 5;

export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', '*'] as const;
export type CorsMethod = (typeof CORS_METHODS)[number];

export const WILDCARD_WITH_CREDENTIALS =
  'allowOrigins "*" with allowCredentials true lets every site make credentialed calls (cookies, Authorization) and read the answers; list the origins that may, or set allowCredentials false';

const HeaderName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 256, pattern: HEADER_NAME_PATTERN, description, expected: 'an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~), or "*" alone' });

/**
 * A list of the Gateway API's: a set (`x-kubernetes-list-type: set`), bounded, where `*`
 * (when `wildcard` names the field) stands alone.
 */
function set<T extends TSchema>(item: T, bounds: { minItems?: number; maxItems: number }, description: string, wildcard?: string) {
  const alone = wildcard ? { 'x-kubernetes-validations': [{ rule: "!('*' in self && self.size() > 1)", message: `${wildcard} cannot contain '*' alongside other entries` }] } : {};
  return Type.Array(item, { ...bounds, description, 'x-kubernetes-list-type': 'set', ...alone });
}

function allowOrigins(minItems: number) {
  return set(
    OriginPattern('An origin whose pages may call the route: http(s)://<host>[:<port>] (port 80 or 443 when absent), the host optionally starting with "*." (any number of labels on the left), or "*" alone (every origin).'),
    { minItems, maxItems: CORS_BOUNDS.maxOrigins },
    'Origins allowed to call the route from a browser. A matching Origin is echoed in Access-Control-Allow-Origin ("*" is sent instead for "*" without credentials).',
    'allowOrigins',
  );
}

/** The fields after allowOrigins, the same in the policy and the filter but for maxAge's bound. */
function corsFields(maxAge: number) {
  return {
    allowMethods: Type.Optional(
      set(
        Enum(CORS_METHODS, 'An HTTP method, or "*" alone (any).'),
        { maxItems: CORS_BOUNDS.maxMethods },
        'Methods a preflight allows (Access-Control-Allow-Methods). GET, HEAD and POST need no preflight. "*" with credentials echoes the requested method.',
        'allowMethods',
      ),
    ),
    allowHeaders: Type.Optional(
      set(
        HeaderName('A request header name (case-insensitive), or "*" alone (any).'),
        { maxItems: CORS_BOUNDS.maxHeaders },
        'Request headers a preflight allows (Access-Control-Allow-Headers). "*" with credentials echoes the requested headers.',
        'allowHeaders',
      ),
    ),
    exposeHeaders: Type.Optional(
      set(
        HeaderName('A response header name, or "*" (every one).'),
        { maxItems: CORS_BOUNDS.maxHeaders },
        'Response headers scripts may read beyond the safelisted ones (Access-Control-Expose-Headers). "*" with credentials lists the names of the response\'s own headers.',
      ),
    ),
    allowCredentials: Type.Optional(Type.Boolean({ description: 'Whether pages may send credentials (cookies, Authorization) and read the answer: Access-Control-Allow-Credentials: true. Default false.' })),
    maxAge: Type.Optional(
      Type.Integer({ minimum: 1, maximum: maxAge, description: `Seconds a browser may cache a preflight's answer (Access-Control-Max-Age); default ${DEFAULT_CORS_MAX_AGE}, at most ${maxAge}.` }),
    ),
  };
}

/** The `cors` policy kind (`traffic.cors`). */
export const CorsConfig = Type.Object({ allowOrigins: allowOrigins(1), ...corsFields(CORS_BOUNDS.maxAgeSeconds) }, {
  additionalProperties: false,
  description:
    'Cross-origin calls from browsers: preflights (OPTIONS with Access-Control-Request-Method) are answered by the gateway and never forwarded or counted against rate limits; answers to allowed origins carry the Access-Control-* headers. An HTTPRoute CORS filter on the route takes precedence.',
  'x-kubernetes-validations': [{ rule: "!(has(self.allowCredentials) && self.allowCredentials && self.allowOrigins.exists(o, o == '*'))", message: WILDCARD_WITH_CREDENTIALS }],
});
export type CorsConfig = Static<typeof CorsConfig>;

/** The Gateway API's HTTPCORSFilter (a standalone route's `filters[].cors`): allowOrigins optional, "*" with credentials echoes the origin. */
export const CorsFilterConfig = Type.Object(
  { allowOrigins: Type.Optional(allowOrigins(0)), ...corsFields(CORS_BOUNDS.maxFilterAgeSeconds) },
  { additionalProperties: false, description: 'Gateway API HTTPCORSFilter: the route answers preflights and adds the Access-Control-* headers (same fields as the cors policy kind).' },
);
export type CorsFilterConfig = Static<typeof CorsFilterConfig>;

/** The cors settings as the proxy runs them, from a policy or a filter. */
export interface CorsIR {
  /** As configured, lower case; ['*'] for every origin; [] allows none. */
  readonly allowOrigins: readonly string[];
  /** Upper case as HTTP writes them; ['*'] for any; [] sends no Access-Control-Allow-Methods. */
  readonly allowMethods: readonly CorsMethod[];
  /** Lower case; ['*'] for any. */
  readonly allowHeaders: readonly string[];
  /** Lower case; ['*'] for every one. */
  readonly exposeHeaders: readonly string[];
  readonly allowCredentials: boolean;
  readonly maxAge: number;
}

const HeaderList = Type.Array(NonEmpty('Header name, lower case.', 256), { maxItems: CORS_BOUNDS.maxHeaders });
export const corsWireFields = {
  allowOrigins: Type.Array(NonEmpty('Origin pattern.', 253), { maxItems: CORS_BOUNDS.maxOrigins }),
  allowMethods: Type.Array(Type.Union(CORS_METHODS.map((m) => Lit(m))), { maxItems: CORS_BOUNDS.maxMethods }),
  allowHeaders: HeaderList,
  exposeHeaders: HeaderList,
  allowCredentials: Type.Boolean(),
  maxAge: Type.Integer({ minimum: 1, maximum: CORS_BOUNDS.maxFilterAgeSeconds }),
};
export const CorsWire = Obj(corsWireFields, 'Cross-origin calls from browsers.');
