// directResponse: the route answers by itself (maintenance, a deprecation, a fixed JSON error)
// with a status, headers and a bounded body, in place of a backend: no backend is called, and
// the route needs none.
import { Type, type Static } from '@sinclair/typebox';
import { HeaderName, HeaderValue } from '../schema/common.js';
import { NonEmpty, Nullable, Obj, Str, WireSecret } from '../schema/wire-parts.js';
import type { Secret } from '../secret.js';

export const DIRECT_RESPONSE_BOUNDS = {
  /** Of the body as sent: the text's UTF-8 bytes, or the JSON's compact serialization. */
  maxBodyBytes: 65_536,
  /** Nesting of a JSON body (objects and arrays). */
  maxJsonDepth: 32,
  maxHeaders: 16,
} as const;

/** Statuses whose answers have no body (RFC 9110). */
export const BODYLESS_STATUSES = [204, 205, 304] as const;

/**
 * Headers a direct response may not set: the framing and connection headers are the proxy's
 * (content-length is the body's), and these would make the answer lie about itself.
 */
export const RESERVED_RESPONSE_HEADERS = ['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer'] as const;

export const DirectResponseConfig = Type.Object(
  {
    status: Type.Integer({ minimum: 200, maximum: 599, description: 'Status of the answer, 200 to 599.' }),
    headers: Type.Optional(
      Type.Array(
        Type.Object({ name: HeaderName('Header name (case-insensitive).'), value: HeaderValue('Header value.') }, { additionalProperties: false, description: 'A response header.' }),
        {
          maxItems: DIRECT_RESPONSE_BOUNDS.maxHeaders,
          description: `Headers of the answer; content-type defaults to the body's (text/plain; charset=utf-8 or application/json). Not: ${RESERVED_RESPONSE_HEADERS.join(', ')}.`,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        },
      ),
    ),
    body: Type.Optional(
      Type.Object(
        {
          text: Type.Optional(Type.String({ maxLength: DIRECT_RESPONSE_BOUNDS.maxBodyBytes, description: `The body as text, sent as UTF-8; at most ${DIRECT_RESPONSE_BOUNDS.maxBodyBytes} bytes.` })),
          json: Type.Optional(
            Type.Unsafe<Record<string, unknown>>({
              type: 'object',
              description: `The body as a JSON object, sent compact with content-type application/json; at most ${DIRECT_RESPONSE_BOUNDS.maxBodyBytes} bytes and ${DIRECT_RESPONSE_BOUNDS.maxJsonDepth} levels deep. The Kubernetes API server drops null values from it: for a body with nulls, write it as text with a content-type header.`,
              'x-kubernetes-preserve-unknown-fields': true,
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'The body: text or json, exactly one. Absent: no body.',
          'x-kubernetes-validations': [{ rule: 'has(self.text) != has(self.json)', message: 'set exactly one of text or json' }],
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'The route answers by itself with this status, headers and body instead of calling a backend (after authentication and rate limits; a route with it needs no backend). Counted in tollgate_direct_responses_total.',
    'x-kubernetes-validations': [{ rule: '!has(self.body) || !(self.status in [204, 205, 304])', message: 'a 204, 205 or 304 answer has no body; remove body or choose another status' }],
  },
);
export type DirectResponseConfig = Static<typeof DirectResponseConfig>;

export interface DirectResponseIR {
  readonly status: number;
  /** Names lower case; a credential header's value is a Secret. */
  readonly headers: readonly { readonly name: string; readonly value: string | Secret }[];
  /** The body as sent, and its content type; null: none. */
  readonly body: { readonly contentType: string; readonly text: string } | null;
}

export const DirectResponseWire = Obj(
  {
    status: Type.Integer({ minimum: 200, maximum: 599 }),
    headers: Type.Array(Obj({ name: NonEmpty('Header name, lower case.', 256), value: Type.Union([Str('Header value.'), WireSecret]) }, 'A response header.'), {
      maxItems: DIRECT_RESPONSE_BOUNDS.maxHeaders,
    }),
    body: Nullable(Obj({ contentType: NonEmpty('Content type of the body.', 256), text: Str('The body.', DIRECT_RESPONSE_BOUNDS.maxBodyBytes) }, 'The body.')),
  },
  'The route answers by itself.',
);
