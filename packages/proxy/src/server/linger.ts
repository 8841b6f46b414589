// A request answered before its body was read (408 for a slow body, 503 when the body budget
// is full, 413) ends its connection. Closing a socket that still receives bytes makes the
// kernel answer with a reset, which can reach the client before it has read the answer and
// destroy the answer in its buffers: the client sees ECONNRESET instead of the error that says
// why. So such a connection is closed the way HTTP servers close it (RFC 9112 §9.6, "lingering
// close"): once the answer is written the write side is shut (the client reads the answer and
// then the end), and the request, and with it the connection, is ended when the client closes
// its side or after LINGER_MS, whichever comes first. Meanwhile what the client still sends is
// read as the request reads it (bounded by the request's own limits).
import type { IncomingMessage } from 'node:http';

export const LINGER_MS = 2_000;

/**
 * Ends the request and its connection once its answer is out, lingering as above. Call it
 * instead of destroying the request, after the answer was started with `Connection: close`.
 */
export function closeAfterAnswer(req: IncomingMessage): void {
  const socket = req.socket;
  if (socket.destroyed) return;
  const end = (): void => {
    clearTimeout(cut);
    req.destroy();
    socket.destroy();
  };
  const cut = setTimeout(end, LINGER_MS);
  cut.unref();
  socket.once('end', end);
  socket.once('close', () => clearTimeout(cut));
  // Node's server ends a connection that is not kept alive with destroySoon() once the response
  // is finished: here that only shuts the write side, the rest is left to `end`.
  socket.destroySoon = function shutWriteSide(this: typeof socket) {
    if (!this.destroyed) this.end();
  };
}
