// Which requests the HTTP server hands over as upgrades, and the response object an upgrade
// request is answered with while it is still HTTP.
//
// Only a WebSocket opening handshake is an upgrade here (RFC 6455 §4.1: GET, `Connection:
// upgrade`, `Upgrade: websocket`, no body). Any other Upgrade header (h2c, TLS/1.0) is an
// ordinary request: the server may ignore an upgrade it does not take (RFC 9110 §7.8), and
// its Connection and Upgrade headers, hop-by-hop, do not reach the backend.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { http } from '@tollgate/kit/node-http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { LINGER_MS } from './linger.js';

function hasToken(value: string | string[] | undefined, token: string): boolean {
  if (value === undefined) return false;
  for (const v of Array.isArray(value) ? value : [value]) {
    for (const t of v.split(',')) if (t.trim().toLowerCase() === token) return true;
  }
  return false;
}

/** node:http's shouldUpgradeCallback: true for a WebSocket opening handshake. */
export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  const h = req.headers;
  if (req.method !== 'GET' || h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0')) return false;
  return hasToken(h.upgrade, 'websocket') && hasToken(h.connection, 'upgrade');
}

/**
 * The response object of an upgrade request, on its connection: the pipeline answers a refusal
 * (401, 404, 429, 503) or a backend's non-101 answer through it as it would any request. The
 * connection then closes, since the HTTP server parses no more requests on it.
 */
export function upgradeResponse(req: IncomingMessage, socket: Duplex): ServerResponse {
  const res = new http.ServerResponse(req);
  res.assignSocket(socket as Socket);
  res.shouldKeepAlive = false;
  // Once the answer is out the proxy ends its side, and the connection is gone when the client
  // ends its own or after LINGER_MS (a client keeping its side open holds nothing; linger.ts
  // says why not at once).
  res.on('finish', () => {
    socket.end();
    const cut = setTimeout(() => socket.destroy(), LINGER_MS);
    cut.unref();
    socket.once('end', () => socket.destroy());
    socket.once('close', () => clearTimeout(cut));
  });
  // A client that resets its connection mid-answer ends this request only.
  socket.on('error', () => socket.destroy());
  return res;
}
