// HTTP/2 from clients, on both kinds of bind: a plain HTTP bind takes it by prior knowledge
// (./h2c.ts), an HTTPS bind when ALPN chose `h2` (./alpn.ts). Either hands the connection to an
// Http2Front, whose requests go to the same handler as HTTP/1.1's (node:http2's compatibility
// objects have the shape of node:http's), so an HTTP/2 request goes through the same pipeline:
// listener (the 421 of a connection reused for another listener's host), policies, limits,
// trace, the request log and metrics.
//
// Bounds, the same on both binds and owned here: a session carries at most
// MAX_CONCURRENT_STREAMS requests at once and headers up to MAX_HEADER_LIST_BYTES; an idle
// session is closed after the keep-alive timeout; node:http2's own limits (session memory,
// invalid frames, rejected and reset streams) stand. The per-bind connection cap counts HTTP/2
// connections like any other: the listening server accepted them. The drain sends each session
// a GOAWAY (requests in flight finish, new ones go elsewhere) and cuts what is left at its
// deadline.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants, createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Server, type ServerHttp2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { closeAfterAnswer } from './linger.js';

/** Requests one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
export const MAX_CONCURRENT_STREAMS = 128;
/** Largest header list of one HTTP/2 request (SETTINGS_MAX_HEADER_LIST_SIZE; HPACK-decoded, 32 bytes per field counted). */
export const MAX_HEADER_LIST_BYTES = 32 * 1024;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The HTTP/2 side of a bind: its sessions, kept to be closed at the drain. */
export class Http2Front {
  readonly #server: Http2Server;
  readonly #sessions = new Set<ServerHttp2Session>();

  constructor(handler: Handler, idleMs: number) {
    this.#server = createHttp2Server({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_LIST_BYTES } }, handler as unknown as (req: Http2ServerRequest, res: Http2ServerResponse) => void);
    this.#server.on('session', (session: ServerHttp2Session) => {
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
      // An idle session (no frame either way) is closed gracefully: GOAWAY, then the socket.
      session.setTimeout(idleMs, () => session.close());
      // A session's failure (a protocol error of the client) ends that session only.
      session.on('error', () => session.destroy());
    });
  }

  /**
   * Takes a connection that speaks HTTP/2 from its next byte: a plain one whose first bytes (put
   * back in its buffer) are the preface, or a TLS one whose handshake chose `h2`.
   */
  accept(socket: Socket): void {
    this.#server.emit('connection', socket);
  }

  /** The drain begins: every session is told (GOAWAY) to open no new request; those in flight finish. */
  goAway(): void {
    for (const s of this.#sessions) s.close();
  }

  /** The drain's deadline: what is left is cut. */
  destroyAll(): void {
    for (const s of this.#sessions) s.destroy();
  }
}

/** Whether a request came over HTTP/2. */
export function isHttp2(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 2;
}

/** `Connection: close` for an HTTP/1.1 answer that ends its connection; nothing on HTTP/2, which has no such header. */
export function closeHeaders(req: IncomingMessage): Record<string, string> {
  return isHttp2(req) ? {} : { connection: 'close' };
}

/**
 * A request answered before its body was read: on HTTP/1.1 its connection closes (linger.ts);
 * on HTTP/2 only its stream, with RST_STREAM NO_ERROR, which tells the client to stop sending
 * the body (RFC 9113 §8.1) and leaves its other requests alone. Called once the answer is
 * written: node:http2 sends what is queued before the reset. Not left to the end of the
 * answer: a stream whose body was partly read and paused is not reset by node:http2 when its
 * response ends, and would stay open, its client still sending.
 */
export function endAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  if (!isHttp2(req)) {
    closeAfterAnswer(req);
    return;
  }
  const stream = (res as unknown as Http2ServerResponse).stream;
  if (!stream.destroyed && !stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
}
