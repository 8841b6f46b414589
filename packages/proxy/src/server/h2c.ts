// HTTP/2 from clients on plain HTTP binds, by prior knowledge (RFC 9113 §3.3): a connection
// whose first bytes are the HTTP/2 connection preface goes to the bind's HTTP/2 front
// (./http2.ts), any other to the HTTP/1.1 server, as Envoy's automatic codec does. The
// HTTP/1.1 Upgrade to h2c (deprecated by RFC 9113) is not taken: such a request is served in
// HTTP/1.1. The first bytes must come within the request headers timeout: a client that
// connects and sends nothing holds nothing. One that closes before sending anything (a TCP
// probe) is closed at once: the server is half-open (allowHalfOpen), and until the sniff hands
// the socket over no parser would end it, so it would hold a drain until that timeout.
import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import type { Http2Front } from './http2.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * Puts a sniff in front of the HTTP/1.1 server's connection handling: each new connection's
 * first bytes decide which server gets it. Called once, before the server listens.
 */
export function sniffPriorKnowledge(server: HttpServer, h2: Http2Front, firstBytesMs: number): void {
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
      socket.off('end', fail);
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
    socket.on('end', fail);
    socket.on('close', stop);
    socket.on('error', fail);
  });
}
