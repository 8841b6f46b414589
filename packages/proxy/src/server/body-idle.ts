// The request-body idle timeout: a client that stops sending its body (a byte every few
// seconds, or nothing) must not hold a connection forever. Node has no such timeout, and the
// socket timeout cannot serve: it also fires while a response pauses (LLM streams do), which
// only the route's timeouts govern. So a timer per request with a body watches the bytes the
// socket has read; time the proxy itself is not reading (its buffer full: the backend is slow
// to take the body) never counts against the client.
import type { IncomingMessage } from 'node:http';

/**
 * Calls `onIdle` when no byte of the body arrived for `idleMs`; stops once the body is in.
 * `hasBody` comes from the headers (RequestContext.hasBody): `complete` is still false for a
 * body-less request when its handler runs, so it cannot tell, and most requests (GETs) then
 * cost nothing here.
 */
export function watchBodyIdle(req: IncomingMessage, hasBody: boolean, idleMs: number, onIdle: () => void): void {
  if (!hasBody || req.complete || idleMs <= 0) return;
  const socket = req.socket;
  let seen = socket.bytesRead;
  const check = (): void => {
    if (req.complete || req.destroyed) return;
    const read = socket.bytesRead;
    if (read !== seen || req.readableLength > 0) {
      seen = read;
      timer.refresh();
      return;
    }
    onIdle();
  };
  const timer = setTimeout(check, idleMs);
  timer.unref();
  req.once('close', () => clearTimeout(timer));
  req.once('end', () => clearTimeout(timer));
}
