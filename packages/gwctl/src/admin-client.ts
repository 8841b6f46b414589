// HTTP to the admin server: plain requests (/config_dump, /logging) and event streams.
// Connection failures go through the target, which knows whether a port-forward or the
// server itself is to blame; error answers become ADMIN_ERROR with the server's own text.
// Nothing waits forever: a server that accepts and then stalls (no headers, a body that stops)
// is given up on after the target's timeout, and an answer is capped in size.
import type { IncomingMessage } from 'node:http';
import { http } from '@tollgate/kit/node-http';
import { GwctlError } from './errors.js';
import type { Target } from './target/target.js';

/** Largest answer gwctl reads (a /config_dump of a big gateway is a few MiB). */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

type Phase = 'connect' | 'headers' | 'body';
const WAITING_FOR: Record<Phase, string> = { connect: 'connection', headers: 'response headers', body: 'further byte of the answer' };

export function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function timeoutError(target: Target, method: string, path: string, phase: Phase, ms: number, stream: boolean): GwctlError {
  const what = stream && phase === 'body' ? 'byte of the stream (not even a keepalive)' : WAITING_FOR[phase];
  return new GwctlError('TG_GWCTL_ADMIN_TIMEOUT', `the admin server at ${target.description} stalled: no ${what} within ${formatMs(ms)} (${method} ${path.split('?')[0]}); --timeout sets the limit`);
}

/**
 * Sends one request; resolves with the response once its headers arrived. The socket's idle
 * timer covers the connection, the wait for headers and every gap in the body; it fires as
 * an ADMIN_TIMEOUT error destroying the request.
 */
function exchange(
  target: Target,
  method: 'GET' | 'POST',
  path: string,
  opts: { headers?: Record<string, string>; signal?: AbortSignal; idleMs?: number } = {},
): Promise<IncomingMessage> {
  const headersMs = target.timeoutMs;
  return new Promise((resolve, reject) => {
    let phase: Phase = 'connect';
    let response: IncomingMessage | undefined;
    const req = http.request(`${target.adminUrl}${path}`, { method, agent: false, headers: opts.headers, signal: opts.signal, timeout: headersMs }, (res) => {
      phase = 'body';
      response = res;
      req.setTimeout(opts.idleMs ?? headersMs);
      resolve(res);
    });
    req.on('socket', (socket) => socket.once('connect', () => phase === 'connect' && (phase = 'headers')));
    req.on('timeout', () => {
      const err = timeoutError(target, method, path, phase, phase === 'body' ? (opts.idleMs ?? headersMs) : headersMs, opts.idleMs !== undefined);
      // Whoever reads the body sees the timeout as the reason it ended.
      if (response) response.destroy(err);
      req.destroy(err);
    });
    req.on('error', (err) => reject(err instanceof GwctlError ? err : target.unreachable(err, { kind: 'admin' })));
    req.end();
  });
}

/** The body, up to MAX_ANSWER_BYTES; a failure mid-body is the target's (or a timeout). */
async function readBody(target: Target, res: IncomingMessage, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > MAX_ANSWER_BYTES) {
        res.destroy();
        throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `${what} answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB; that is not an admin server answer`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    throw err instanceof GwctlError ? err : target.unreachable(err, { kind: 'admin' });
  }
  if (!res.complete) throw target.unreachable(new Error('the connection closed before the answer was complete'), { kind: 'admin' });
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** One request to the admin server; rejects only when the server cannot be reached or stalls. */
export async function adminRequest(target: Target, method: 'GET' | 'POST', path: string): Promise<Answer> {
  const res = await exchange(target, method, path);
  const body = await readBody(target, res, `${method} ${path.split('?')[0]}`);
  return { status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body };
}

/** The first line of an error answer, for a one-line message. */
export function firstLine(body: string): string {
  const line = body.trim().split('\n')[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

export function adminError(method: string, path: string, a: Answer): GwctlError {
  const what = path.split('?')[0];
  return new GwctlError('TG_GWCTL_ADMIN_ERROR', `${method} ${what} answered ${a.status}: ${firstLine(a.body) || '(empty body)'}`);
}

/** A request that must succeed (2xx); its body. */
export async function adminOk(target: Target, method: 'GET' | 'POST', path: string): Promise<string> {
  const a = await adminRequest(target, method, path);
  if (a.status < 200 || a.status >= 300) throw adminError(method, path, a);
  return a.body;
}

export async function adminJson(target: Target, path: string): Promise<unknown> {
  const body = await adminOk(target, 'GET', path);
  try {
    return JSON.parse(body) as unknown;
  } catch {
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `GET ${path} did not answer JSON: ${firstLine(body) || '(empty body)'}`);
  }
}

/**
 * Opens an event stream (`accept: text/event-stream`); resolves with the response once the
 * server answered 200. Aborting `signal` disconnects. The stream is given up on after the
 * target's streamIdleMs without a byte; a waiting trace receives keepalives more often.
 */
export async function adminStream(target: Target, path: string, signal: AbortSignal): Promise<IncomingMessage> {
  const idleMs = target.streamIdleMs;
  const res = await exchange(target, 'GET', path, { headers: { accept: 'text/event-stream' }, signal, idleMs });
  if (res.statusCode === 200) return res;
  const body = await readBody(target, res, `GET ${path.split('?')[0]}`);
  throw adminError('GET', path, { status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body });
}
