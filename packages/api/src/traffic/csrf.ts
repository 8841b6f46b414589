// csrf: a browser page of another site must not make the route act on a visitor's behalf
// (a form post, a fetch with its cookies). A request that can change state (any method but
// GET, HEAD, OPTIONS and TRACE) passes only when its Origin (or, without Origin, its Referer)
// is the origin it was sent to or one of additionalOrigins. docs/cors-csrf-direct-response.md
// says what this protects and what it does not.
import { Type, type Static } from '@sinclair/typebox';
import { NonEmpty, Obj } from '../schema/wire-parts.js';
import { OriginPattern } from './origin.js';

export const MAX_CSRF_ORIGINS = 64;

export const CsrfConfig = Type.Object(
  {
    additionalOrigins: Type.Optional(
      Type.Array(
        OriginPattern('An origin whose pages may send state-changing requests: http(s)://<host>[:<port>] (port 80 or 443 when absent), the host optionally starting with "*." (any number of labels on the left). "*" is refused: it would turn the check off.'),
        {
          maxItems: MAX_CSRF_ORIGINS,
          description: 'Origins allowed besides the one the request was sent to (the listener\'s scheme and the Host header), e.g. the front end\'s origin, or the https origin when a load balancer in front terminates TLS.',
          'x-kubernetes-list-type': 'set',
          'x-kubernetes-validations': [{ rule: "!self.exists(o, o == '*')", message: "additionalOrigins cannot be '*': that would allow every site; remove the csrf policy instead" }],
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Refuses (403) requests with an unsafe method (anything but GET, HEAD, OPTIONS, TRACE) whose Origin, or Referer when Origin is absent, is neither the request\'s own origin nor in additionalOrigins. Requests with neither header (API clients, curl) pass. `csrf: {}` allows the own origin only.',
  },
);
export type CsrfConfig = Static<typeof CsrfConfig>;

export interface CsrfIR {
  /** Origin patterns, lower case. */
  readonly additionalOrigins: readonly string[];
}

export const CsrfWire = Obj({ additionalOrigins: Type.Array(NonEmpty('Origin pattern.', 253), { maxItems: MAX_CSRF_ORIGINS }) }, 'Cross-site request forgery protection.');
