// HTTP/2 from clients on HTTPS binds, chosen in the TLS handshake by ALPN (RFC 7301, RFC 9113
// §3.2): the server offers `h2` then `http/1.1`, in that order of preference, with the same
// certificates and SNI selection whichever is chosen. A connection whose handshake chose `h2`
// goes to the bind's HTTP/2 front (./http2.ts); one that chose `http/1.1`, or whose client sent
// no ALPN, to the HTTP/1.1 server (which also takes WebSocket upgrades: a WebSocket client opens
// an HTTP/1.1 connection; the HTTP/2 front does not offer RFC 8441's extended CONNECT). A client
// that offers ALPN names but neither of these gets the `no_application_protocol` alert
// (RFC 7301 §3.2).
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Http2Front } from './http2.js';

/** What an HTTPS bind offers in ALPN, most preferred first. */
export const ALPN_PROTOCOLS: readonly string[] = ['h2', 'http/1.1'];

/**
 * Puts the ALPN choice in front of the HTTP/1.1 server's handling of a secured connection.
 * Called once, before the server listens; a listener prepended later (the handshake record)
 * still runs first.
 */
export function dispatchByAlpn(server: HttpsServer, h2: Http2Front): void {
  const http1 = server.listeners('secureConnection') as ((socket: TLSSocket) => void)[];
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') {
      // The handshake's record may have refused the client (its certificate) and closed it.
      if (!socket.destroyed) h2.accept(socket);
      return;
    }
    for (const listener of http1) listener.call(server, socket);
  });
}
