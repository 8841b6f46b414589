// The request-body timeouts: a client that stops sending its body (a byte every few seconds,
// or nothing) must not hold a connection, or the body bytes it sent, for long. Node has no
// such timeout, and the socket timeout cannot serve: it also fires while a response pauses
// (LLM streams do), which only the route's timeouts govern. So one timer per request with a
// body watches two things:
// - idle (config.requestBodyIdleTimeout): no byte of the body for that long. Time the proxy
//   itself is not reading (its buffer full: the backend is slow to take the body) never counts
//   against the client;
// - deadline (config.requestBodyTimeout): the whole body is not in that long after the
//   headers, whatever its pace: a byte every idle timeout less a second would hold the
//   connection for hours otherwise.
import type { IncomingMessage } from 'node:http';

export interface BodyTimeouts {
  readonly idleMs: number;
  readonly deadlineMs: number;
}

export type BodyTimeout = 'idle' | 'deadline';

/**
 * Calls `onTimeout` once the body went idle or missed its deadline; stops once the body is
 * in. `hasBody` comes from the headers (RequestContext.hasBody): `complete` is still false for
 * a body-less request when its handler runs, so it cannot tell, and most requests (GETs) then
 * cost nothing here.
 */
export function watchBody(req: IncomingMessage, hasBody: boolean, limits: BodyTimeouts, onTimeout: (why: BodyTimeout) => void): void {
  if (!hasBody || req.complete) return;
  const socket = req.socket;
  let seen = socket.bytesRead;
  const deadline = performance.now() + limits.deadlineMs;
  const check = (): void => {
    if (req.complete || req.destroyed) return;
    const left = deadline - performance.now();
    if (left <= 0) {
      onTimeout('deadline');
      return;
    }
    const read = socket.bytesRead;
    if (read === seen && req.readableLength === 0) {
      onTimeout('idle');
      return;
    }
    seen = read;
    // The same timer again while a whole idle period fits before the deadline; the last stretch
    // gets a timer of its own (once per request at most).
    if (left >= limits.idleMs) timer.refresh();
    else timer = arm(Math.ceil(left));
  };
  const arm = (ms: number): NodeJS.Timeout => {
    const t = setTimeout(check, ms);
    t.unref();
    return t;
  };
  let timer = arm(Math.min(limits.idleMs, limits.deadlineMs));
  const stop = (): void => clearTimeout(timer);
  req.once('close', stop);
  req.once('end', stop);
}
