// HTTP/2 over TLS to a backend (BackendProtocolIR `h2`): the connector of its undici pool. It
// offers ALPN `h2` alone, where undici's own connector offers `http/1.1` first and lets the
// backend choose: a gRPC backend must get HTTP/2, and one that cannot speak it fails the request
// with TG_UPSTREAM_NO_H2 instead of getting HTTP/1.1, in which a gRPC call loses its trailers.
// Everything else is the TLS of any backend (backend-tls.ts: CA, names checked, client
// certificate, minimum version, SNI): the same options and the same certificate error codes.
// undici speaks HTTP/2 on the socket because its ALPN says `h2` (Client reads alpnProtocol), so
// the pool, its streams per connection and the dispatch are those of h2c (endpoints.ts).
import { isIP, type LookupFunction } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import type { BackendTLSIR } from '@tollgate/api';
import type { buildConnector as BuildConnector } from 'undici';
import { connectOptions } from './backend-tls.js';

type Connector = BuildConnector.connector;

/** The error code of a backend whose handshake chose no `h2` (classified as TG_UPSTREAM_NO_H2). */
export const NO_H2_CODE = 'TG_UPSTREAM_NO_H2';
/** OpenSSL's alert when the backend offers ALPN but none of ours: the same failure, said by the peer. */
export const NO_APPLICATION_PROTOCOL = 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL';
/** As undici's own connector says a connect timeout, so that forward.ts classifies it alike. */
const CONNECT_TIMEOUT_CODE = 'UND_ERR_CONNECT_TIMEOUT';
/** TCP keep-alive probes after this long idle, as undici's connector sets them. */
const KEEP_ALIVE_DELAY_MS = 60_000;

function coded(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** undici's connector for HTTP/2 over TLS to `tls`'s backend; `timeoutMs` bounds the TCP and TLS handshakes together. */
export function h2TlsConnector(tls: BackendTLSIR, timeoutMs: number, lookup?: LookupFunction): Connector {
  const options = { ...connectOptions(tls), ALPNProtocols: ['h2'], ...(lookup ? { lookup } : {}) };
  const sni = isIP(tls.hostname) ? 'no SNI' : `SNI ${tls.hostname}`;
  return ({ hostname, port }, callback) => {
    const portNumber = Number(port) || 443;
    const socket: TLSSocket = connect({ ...options, host: hostname, port: portNumber });
    let pending: typeof callback | null = callback;
    const settle = (err: Error | null) => {
      clearTimeout(timer);
      const cb = pending;
      pending = null;
      if (!cb) return;
      if (err) {
        socket.destroy();
        cb(err, null);
      } else cb(null, socket);
    };
    const timer = setTimeout(() => settle(coded(`connect timeout after ${timeoutMs} ms to ${hostname}:${portNumber}`, CONNECT_TIMEOUT_CODE)), timeoutMs);
    socket.setNoDelay(true).setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
    socket.once('secureConnect', () => {
      if (socket.alpnProtocol === 'h2') settle(null);
      else settle(coded(`${hostname}:${portNumber} (${sni}) chose ${socket.alpnProtocol ? `ALPN ${socket.alpnProtocol}` : 'no ALPN protocol'}, not h2`, NO_H2_CODE));
    });
    // Errors after the handshake are undici's to handle (it listens once it has the socket).
    socket.on('error', (err) => settle(err));
    return socket;
  };
}
