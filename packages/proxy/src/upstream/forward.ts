// The upstream call: one undici dispatch whose handler writes the response straight to the
// client socket as it arrives, so bodies stream both ways without buffering (an SSE chunk
// reaches the client when the backend sends it) and backpressure flows through: a slow
// client pauses the upstream read. A client that goes away aborts the upstream request.
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ERRORS, type ErrorSpec } from '../errors.js';
import { endToEnd } from './headers.js';

export interface ForwardRequest {
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Readable | Buffer | null;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  /** Whole-exchange deadline (route timeouts.request), or null. */
  readonly requestTimeoutMs: number | null;
}

export interface TransportError {
  /** Catalog code, e.g. TG_UPSTREAM_REFUSED. */
  readonly kind: string;
  readonly message: string;
  /** The catalog entry to answer with when nothing was sent yet. */
  readonly spec?: ErrorSpec;
}

export interface ForwardResult {
  /** Status sent to the client (the backend's, or the error status). */
  readonly status: number;
  /** Status the backend answered, null when it never answered. */
  readonly upstreamStatus: number | null;
  readonly error: TransportError | null;
  /** False when nothing reached the client yet: the caller must answer (with error.spec). */
  readonly responded: boolean;
}

export interface ForwardHooks {
  /** May change the response headers before they are sent (ResponseHeaderModifier). */
  readonly onResponseHeaders?: (status: number, headers: Record<string, string | string[] | undefined>) => void;
  /** Sees each response chunk and returns what to send (the LLM usage meter). */
  readonly transform?: (chunk: Buffer) => Buffer;
  /** Returns what is left to send when the upstream response ends. */
  readonly flush?: () => Buffer;
}

class RequestTimeout extends Error {
  readonly code = 'TG_REQUEST_TIMEOUT';
}
class ClientGone extends Error {
  readonly code = 'TG_CLIENT_GONE';
}

/** Maps an upstream failure to its catalog entry. */
export function classify(err: Error & { code?: string }): ErrorSpec {
  switch (err.code) {
    case 'ECONNREFUSED':
      return ERRORS.upstreamRefused;
    case 'UND_ERR_CONNECT_TIMEOUT':
      return ERRORS.upstreamConnectTimeout;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return ERRORS.upstreamUnresolved;
    case 'UND_ERR_HEADERS_TIMEOUT':
      return ERRORS.upstreamTimeout;
    case 'TG_REQUEST_TIMEOUT':
      return ERRORS.requestTimeout;
    case 'UND_ERR_SOCKET':
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_CLOSED':
      return ERRORS.upstreamReset;
    default:
      return err.code?.startsWith('HPE_') || err.code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' ? ERRORS.upstreamBadResponse : ERRORS.upstreamReset;
  }
}

/** Answers with a catalog entry; returns the headers sent (for the trace). */
export function sendError(res: ServerResponse, spec: ErrorSpec, extraHeaders?: Record<string, string>): Record<string, string> {
  const body = `${spec.body}\n`;
  const headers = {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    ...extraHeaders,
  };
  res.writeHead(spec.status, headers);
  res.end(body);
  return headers;
}

export function forward(dispatcher: Dispatcher, req: ForwardRequest, res: ServerResponse, hooks: ForwardHooks = {}): Promise<ForwardResult> {
  return new Promise<ForwardResult>((resolve) => {
    let controller: Dispatcher.DispatchController | null = null;
    let upstreamStatus: number | null = null;
    let settled = false;
    let pendingAbort: Error | null = null;
    let timer: NodeJS.Timeout | undefined;

    const finish = (result: ForwardResult) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      res.off('close', onClientClose);
      resolve(result);
    };
    const abort = (reason: Error) => {
      if (controller) controller.abort(reason);
      else pendingAbort = reason;
    };
    const onClientClose = () => {
      if (!res.writableFinished) abort(new ClientGone('client disconnected'));
    };
    res.on('close', onClientClose);
    if (req.requestTimeoutMs !== null) {
      timer = setTimeout(() => abort(new RequestTimeout('route request timeout elapsed')), req.requestTimeoutMs);
    }

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (pendingAbort) c.abort(pendingAbort);
      },
      onResponseStart(c, statusCode, headers: IncomingHttpHeaders) {
        if (statusCode < 200) return; // 1xx informational: not relayed
        upstreamStatus = statusCode;
        const out = endToEnd(headers);
        hooks.onResponseHeaders?.(statusCode, out);
        res.writeHead(statusCode, out as Record<string, string | string[]>);
        if (req.method === 'HEAD') res.flushHeaders();
      },
      onResponseData(c, chunk) {
        const out = hooks.transform ? hooks.transform(chunk) : chunk;
        if (out.length && !res.write(out)) {
          c.pause();
          res.once('drain', () => c.resume());
        }
      },
      onResponseEnd() {
        const rest = hooks.flush?.();
        if (rest?.length) res.end(rest);
        else res.end();
        finish({ status: upstreamStatus ?? 502, upstreamStatus, error: null, responded: true });
      },
      onResponseError(_c, err: Error & { code?: string }) {
        if (err instanceof ClientGone) {
          finish({ status: upstreamStatus ?? 499, upstreamStatus, error: { kind: 'TG_CLIENT_GONE', message: err.message }, responded: true });
          return;
        }
        const spec = classify(err);
        const error = { kind: spec.code, message: err.message || spec.body, spec };
        if (!res.headersSent && !res.destroyed) {
          // The caller answers with the catalog entry (so it can trace the final response).
          finish({ status: spec.status, upstreamStatus, error, responded: false });
        } else {
          // Mid-body failure: the status is already sent, so the client learns of it by the
          // connection closing before the body completes.
          res.destroy(err);
          finish({ status: upstreamStatus ?? spec.status, upstreamStatus, error, responded: true });
        }
      },
    };

    try {
      dispatcher.dispatch(
        {
          method: req.method,
          path: req.path,
          headers: req.headers,
          body: req.body,
          headersTimeout: req.headersTimeoutMs,
          bodyTimeout: req.bodyTimeoutMs,
        },
        handler,
      );
    } catch (err) {
      const spec = ERRORS.upstreamBadResponse;
      finish({ status: spec.status, upstreamStatus: null, error: { kind: spec.code, message: (err as Error).message, spec }, responded: false });
    }
  });
}
