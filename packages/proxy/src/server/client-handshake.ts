// The end of a client's TLS handshake on an HTTPS bind: which listener's settings it used, what
// it established about the client's certificate, and whether the connection may go on.
//
// The listener is the one the SNI callback chose for the connection (recorded then, so a
// snapshot applied during the handshake does not change the answer); a ClientHello without SNI
// gets the bind's default context, the default listener's. A listener with AllowValidOnly closes
// a connection whose certificate is absent or does not verify before any request is read; one
// with AllowInsecureFallback lets it on, without an identity. Each request on the connection
// checks the record again (pipeline/listener.ts): the listener it is for must have checked the
// client the same way.
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { recordConnectionTls } from '../pipeline/connection-tls.js';
import { clientCertificateFacts, type CompiledClientValidation } from '../routing/client-validation.js';
import type { BindTls } from '../routing/tls-contexts.js';

interface Chosen {
  readonly listener: string;
  readonly validation: CompiledClientValidation | null;
}

export class ClientHandshakes {
  readonly #chosen = new WeakMap<object, Chosen>();

  constructor(
    private readonly current: () => BindTls,
    private readonly log: Logger,
    private readonly metrics: ProxyMetrics,
  ) {}

  /** The SNI callback chose `listener` for `socket`. */
  chose(socket: object, listener: string, tls: BindTls): void {
    this.#chosen.set(socket, { listener, validation: tls.validation.get(listener) ?? null });
  }

  /** Records what the handshake established; closes the connection when its listener refuses the client. */
  secured(socket: TLSSocket): void {
    let chosen = this.#chosen.get(socket);
    if (!chosen) {
      const tls = this.current();
      chosen = { listener: tls.fallbackListener, validation: tls.validation.get(tls.fallbackListener) ?? null };
    }
    const { listener, validation } = chosen;
    if (!validation) {
      recordConnectionTls(socket, { listener, validation: null, client: null });
      return;
    }
    const client = clientCertificateFacts(socket);
    recordConnectionTls(socket, { listener, validation, client });
    if (client.verified) {
      this.metrics.countClientCertificate('verified');
      return;
    }
    if (validation.ir.mode === 'AllowInsecureFallback') {
      this.metrics.countClientCertificate('unverified');
      return;
    }
    this.metrics.countClientCertificate('refused');
    // The subject of an unverified certificate is what the client claims: logged as such, at debug.
    this.log.debug({ listener, reason: client.error, subject: client.subject ?? undefined }, 'client certificate refused: the connection is closed');
    socket.destroy();
  }
}
