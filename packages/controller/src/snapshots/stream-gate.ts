// Who may hold a stream, and for how long. With TLS (the default) a stream's hello is served only
// once the proxy's token is found to belong to the ServiceAccount of the Gateway it names
// (stream-auth.ts decides); the admitted stream is checked again while it lives and ends at the
// token's expiry and its maximum age (stream-lifetime.ts). Plaintext (development) admits anyone
// who reaches the port, and only the age bounds a stream. Every decision is counted; refusals
// are logged at most once a second per kind, never with the token.
import * as grpc from '@grpc/grpc-js';
import type { Hello } from '@tollgate/api/snapshot-stream';
import type { Logger } from 'pino';
import { bearerToken, type StreamAuthenticator } from './stream-auth.js';
import { StreamLifetime, type EndReason } from './stream-lifetime.js';
import type { StreamLimits } from './stream-limits.js';
import type { StreamMetrics } from './stream-metrics.js';
import type { ThrottledLog } from './throttled-log.js';

export type StreamSecurity =
  | { readonly kind: 'plaintext' }
  | {
      readonly kind: 'tls';
      /** Read at start (the serving certificate may be made by then only). */
      readonly credentials: () => grpc.ServerCredentials;
      readonly auth: StreamAuthenticator;
    };

/** A hello admitted (with the token it came with, re-checked later), or refused with a gRPC status. */
export type Admission = { readonly ok: true; readonly token: string | undefined } | { readonly ok: false; readonly code: grpc.status; readonly message: string };

export interface GateOptions {
  readonly security: StreamSecurity;
  readonly limits: Pick<StreamLimits, 'maxStreamAgeMs' | 'reauthIntervalMs'>;
  readonly metrics: Pick<StreamMetrics, 'auth' | 'reauth'>;
  readonly log: Logger;
  readonly warn: ThrottledLog;
}

export class StreamGate {
  constructor(private readonly o: GateOptions) {}

  /** The server's credentials (TLS: read now, at start). */
  credentials(): grpc.ServerCredentials {
    const sec = this.o.security;
    return sec.kind === 'tls' ? sec.credentials() : grpc.ServerCredentials.createInsecure();
  }

  /**
   * May the stream opened with `metadata` by `peer` serve `hello`? Undefined when the stream
   * went away meanwhile (`gone`): nothing is logged for it.
   */
  async admit(metadata: grpc.Metadata, hello: Hello, peer: string, gone: () => boolean): Promise<Admission | undefined> {
    const sec = this.o.security;
    if (sec.kind === 'plaintext') return { ok: true, token: undefined };
    const token = bearerToken(metadata.get('authorization'));
    const decision = await sec.auth.check(token, hello.gateway);
    this.o.metrics.auth.inc({ result: decision.ok ? 'ok' : decision.result });
    if (gone()) return undefined;
    if (decision.ok) return { ok: true, token };
    const who = hello.pod || peer;
    this.o.warn.warn(
      `refused:${decision.result}`,
      { gateway: hello.gateway, pod: hello.pod, peer, code: 'TG_CONTROLLER_STREAM_REFUSED', status: grpc.status[decision.code] },
      `snapshot stream of ${hello.gateway} refused to ${who}: ${grpc.status[decision.code]}: ${decision.message}`,
    );
    return { ok: false, code: decision.code, message: decision.message };
  }

  /** How long the admitted stream of `gateway` to `pod` lives; `end` ends it (the proxy reconnects). */
  lifetime(gateway: string, pod: string, token: string | undefined, end: (reason: EndReason, code: grpc.status, message: string) => void): StreamLifetime {
    const sec = this.o.security;
    return new StreamLifetime({
      maxAgeMs: this.o.limits.maxStreamAgeMs,
      ...(sec.kind === 'tls'
        ? {
            reauth: {
              token,
              intervalMs: this.o.limits.reauthIntervalMs,
              check: () => sec.auth.check(token, gateway, { fresh: true }),
              checked: (d) => {
                this.o.metrics.reauth.inc({ result: d.ok ? 'ok' : d.result });
                if (!d.ok && d.code === grpc.status.UNAVAILABLE) this.o.log.debug({ gateway, pod, err: d.message }, 'stream not re-authenticated now; kept until the next check');
              },
            },
          }
        : {}),
      end,
    });
  }
}
