// extProc: an external processor sees the request and the response over Envoy's external
// processing protocol (envoy.service.ext_proc.v3.ExternalProcessor/Process, one gRPC
// bidirectional stream per request) and may change them: set, append and remove headers,
// replace bodies, or answer the request itself.
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum } from '../schema/common.js';
import { ServiceAddress } from '../schema/outbound-ref.js';
import { Lit, NonEmpty, Obj } from '../schema/wire-parts.js';

export const EXT_PROC_BOUNDS = {
  /** Default of maxBufferedBytes: the most of a body sent in one message in BUFFERED mode. */
  defaultBufferedBytes: 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  defaultTimeoutMs: 200,
  maxTimeoutMs: 60_000,
  /** Header mutations (set and remove together) one message of the processor may carry. */
  maxHeaderMutations: 100,
  /** Bytes of a streamed chunk's replacement. */
  maxStreamedChunkBytes: 1024 * 1024,
  /** Bytes of an immediate response's body. */
  maxImmediateBodyBytes: 64 * 1024,
} as const;

export const HEADER_MODES = ['SEND', 'SKIP'] as const;
export const BODY_MODES = ['NONE', 'BUFFERED', 'STREAMED'] as const;
export type HeaderMode = (typeof HEADER_MODES)[number];
export type BodyMode = (typeof BODY_MODES)[number];

const HeaderModeField = (what: string, dflt: HeaderMode) => Type.Optional(Enum(HEADER_MODES, `${what}: SEND or SKIP; default ${dflt}.`));
const BodyModeField = (what: string) =>
  Type.Optional(Enum(BODY_MODES, `${what}: NONE (the default: not sent), BUFFERED (whole, at most maxBufferedBytes, in one message) or STREAMED (chunk by chunk as it passes).`));

export const ExtProcConfig = Type.Object(
  {
    service: ServiceAddress('external processor'),
    processingMode: Type.Optional(
      Type.Object(
        {
          requestHeaderMode: HeaderModeField('The request headers', 'SEND'),
          responseHeaderMode: HeaderModeField('The response headers', 'SEND'),
          requestBodyMode: BodyModeField('The request body'),
          responseBodyMode: BodyModeField('The response body'),
        },
        { additionalProperties: false, description: 'Which phases of the exchange are sent to the processor (Envoy\'s ProcessingMode).' },
      ),
    ),
    maxBufferedBytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: EXT_PROC_BOUNDS.maxBufferedBytes,
        description: `The most of a body sent in BUFFERED mode, and of the body the processor returns for it; default ${EXT_PROC_BOUNDS.defaultBufferedBytes}, at most ${EXT_PROC_BOUNDS.maxBufferedBytes}. A longer request body is refused (413); a longer response body takes the failure mode.`,
      }),
    ),
    messageTimeout: Type.Optional(Duration(`Time to wait for the processor's answer to each message, at most 60s; default ${EXT_PROC_BOUNDS.defaultTimeoutMs}ms.`)),
    failureMode: Type.Optional(
      Enum(['FailOpen', 'FailClosed'], 'When the processor cannot be reached, times out, closes the stream or answers garbage: FailClosed (the default) answers 502 TG_EXT_PROC_FAILED (or cuts a response already started); FailOpen goes on unprocessed.'),
    ),
  },
  { additionalProperties: false, description: 'An external processor sees and may change the request and the response (Envoy external processing).' },
);
export type ExtProcConfig = Static<typeof ExtProcConfig>;

export interface ExtProcIR {
  /** `<host>:<port>` of the processor. */
  readonly service: string;
  readonly requestHeaderMode: HeaderMode;
  readonly responseHeaderMode: HeaderMode;
  readonly requestBodyMode: BodyMode;
  readonly responseBodyMode: BodyMode;
  readonly maxBufferedBytes: number;
  readonly messageTimeoutMs: number;
  readonly failureMode: 'FailOpen' | 'FailClosed';
}

const HeaderModeWire = Type.Union(HEADER_MODES.map((m) => Lit(m)));
const BodyModeWire = Type.Union(BODY_MODES.map((m) => Lit(m)));
export const ExtProcWire = Obj(
  {
    service: NonEmpty('`<host>:<port>`.', 400),
    requestHeaderMode: HeaderModeWire,
    responseHeaderMode: HeaderModeWire,
    requestBodyMode: BodyModeWire,
    responseBodyMode: BodyModeWire,
    maxBufferedBytes: Type.Integer({ minimum: 1, maximum: EXT_PROC_BOUNDS.maxBufferedBytes }),
    messageTimeoutMs: Type.Integer({ minimum: 1, maximum: EXT_PROC_BOUNDS.maxTimeoutMs }),
    failureMode: Type.Union([Lit('FailOpen'), Lit('FailClosed')]),
  },
  'External processing.',
);
