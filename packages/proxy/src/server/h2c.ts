// HTTP/2 from clients on plain HTTP listeners, by prior knowledge (RFC 9113 §3.3): a
// connection whose first bytes are the HTTP/2 connection preface goes to an HTTP/2 server, any
// other to the HTTP/1.1 server, as Envoy's automatic codec does. Both hand their requests to
// the same handler (node:http2's compatibility objects have the shape of node:http's), so an
// HTTP/2 request goes through the same pipeline. The HTTP/1.1 Upgrade to h2c (deprecated by
// RFC 9113) is not taken: such a request is served in HTTP/1.1.
//
// Bounds: the first bytes must come within the request headers timeout (a client that connects
// and sends nothing holds nothing); a session carries at most MAX_CONCURRENT_STREAMS requests at
// once and headers up to MAX_HEADER_LIST_BYTES; an idle session is closed after the keep-alive
// timeout; node:http2's own limits (session memory, invalid frames, rejected and reset streams)
// stand. The per-bind connection cap counts HTTP/2 connections like any other: the listening
// server accepted them.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { constants, createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Server, type ServerHttp2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { closeAfterAnswer } from './linger.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Requests one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
export const MAX_CONCURRENT_STREAMS = 128;
/** Largest header list of one HTTP/2 request (SETTINGS_MAX_HEADER_LIST_SIZE; HPACK-decoded, 32 bytes per field counted). */
export const MAX_HEADER_LIST_BYTES = 32 * 1024;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The HTTP/2 side of a plain HTTP bind: its sessions, kept to be closed at the drain. */
export class H2cFront {
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

  /** Takes a connection whose first bytes (put back in its buffer) are the preface. */
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

/**
 * Puts a sniff in front of the HTTP/1.1 server's connection handling: each new connection's
 * first bytes decide which server gets it. Called once, before the server listens.
 */
export function sniffPriorKnowledge(server: HttpServer, h2: H2cFront, firstBytesMs: number): void {
  const http1 = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    let seen: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), firstBytesMs);
    // Errors of a connection not handed over yet end it (the servers install their own after).
    const fail = (): void => void socket.destroy();
    const stop = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', stop);
      socket.off('error', fail);
    };
    const onData = (chunk: Buffer): void => {
      seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
      const n = Math.min(seen.length, PREFACE.length);
      const preface = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (preface && seen.length < PREFACE.length) return; // a prefix of it so far: wait for the rest
      stop();
      socket.pause();
      socket.unshift(seen);
      if (preface) {
        // node:http2 reads what the socket holds already on its next tick; resuming the socket
        // here would hand those bytes to nobody.
        h2.accept(socket);
        return;
      }
      // node:http's parser takes the socket's reads from here; the bytes put back reach it on
      // the next tick, before any later read (no I/O runs in between), so their order holds.
      for (const listener of http1) listener.call(server, socket);
      socket.resume();
    };
    socket.on('data', onData);
    socket.on('close', stop);
    socket.on('error', fail);
  });
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
