// HTTP to the admin server: plain requests (/config_dump, /logging) and the trace SSE stream.
// Connection failures go through the target, which knows whether a port-forward or the
// server itself is to blame; error answers become ADMIN_ERROR with the server's own text.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { TraceEvent } from '@tollgate/api';
import { SseParser } from '@tollgate/kit';
import { GwctlError } from './errors.js';
import type { Target } from './target/target.js';

export interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}

/** One request to the admin server; rejects only when the server cannot be reached. */
export function adminRequest(target: Target, method: 'GET' | 'POST', path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${target.adminUrl}${path}`, { method, agent: false }, (res) => {
      readBody(res).then(
        (body) => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body }),
        (err: unknown) => reject(target.unreachable(err, { kind: 'admin' })),
      );
    });
    req.on('error', (err) => reject(target.unreachable(err, { kind: 'admin' })));
    req.end();
  });
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

export async function adminJson<T>(target: Target, path: string): Promise<T> {
  const body = await adminOk(target, 'GET', path);
  try {
    return JSON.parse(body) as T;
  } catch {
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `GET ${path} did not answer JSON: ${firstLine(body)}`);
  }
}

/** A trace event is a few KiB; anything this large is not one. */
const MAX_TRACE_EVENT_BYTES = 16 * 1024 * 1024;

export interface TraceSession {
  /** Resolves with the opening comment once the session is armed. */
  readonly armed: Promise<string>;
  /** Resolves with every event after `requestFinished`; rejects when the stream fails first. */
  readonly finished: Promise<TraceEvent[]>;
  /** Disconnects, which disarms the session on the server. */
  close(): void;
}

/**
 * Arms a trace session (`GET /debug/trace[?match=]`) and calls `onEvent` for each event as it
 * arrives. The stream ends after `requestFinished`.
 */
export function openTrace(target: Target, opts: { match?: string; onEvent?: (e: TraceEvent) => void } = {}): TraceSession {
  const path = `/debug/trace${opts.match ? `?match=${encodeURIComponent(opts.match)}` : ''}`;
  let resolveArmed!: (s: string) => void;
  let rejectArmed!: (e: Error) => void;
  const armed = new Promise<string>((res, rej) => ((resolveArmed = res), (rejectArmed = rej)));
  let closedByUs = false;
  let req: ReturnType<typeof httpRequest> | undefined;
  const finished = new Promise<TraceEvent[]>((resolve, reject) => {
    const events: TraceEvent[] = [];
    const fail = (err: Error) => {
      rejectArmed(err);
      reject(err);
    };
    req = httpRequest(`${target.adminUrl}${path}`, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        readBody(res).then(
          (body) => fail(adminError('GET', path, { status: res.statusCode ?? 0, contentType: '', body })),
          (err: unknown) => fail(target.unreachable(err, { kind: 'admin' })),
        );
        return;
      }
      const parser = new SseParser({ maxLineBytes: MAX_TRACE_EVENT_BYTES });
      let done = false;
      res.on('data', (chunk: Buffer) => {
        for (const item of parser.push(chunk)) {
          if (item.type === 'passthrough') {
            fail(new GwctlError('TG_GWCTL_ADMIN_ERROR', `the trace stream sent an event larger than ${MAX_TRACE_EVENT_BYTES} bytes`));
            res.destroy();
            return;
          }
          if (!item.data) {
            if (item.comments.length) resolveArmed(item.comments.join('\n').trim());
            continue;
          }
          let event: TraceEvent;
          try {
            event = JSON.parse(item.data) as TraceEvent;
          } catch {
            fail(new GwctlError('TG_GWCTL_ADMIN_ERROR', `the trace stream sent an event that is not JSON: ${firstLine(item.data)}`));
            res.destroy();
            return;
          }
          // Some servers send no opening comment: the first event proves the session was armed.
          resolveArmed('');
          events.push(event);
          opts.onEvent?.(event);
          if (event.message.type === 'requestFinished') done = true;
        }
      });
      const end = () => {
        if (done) resolve(events);
        else if (closedByUs) reject(new GwctlError('TG_GWCTL_INTERRUPTED', 'trace cancelled before the request finished'));
        else fail(new GwctlError('TG_GWCTL_ADMIN_UNREACHABLE', `the trace stream from ${target.description} ended before the request finished (the proxy restarted or shut down?)`));
      };
      res.on('end', end);
      res.on('close', end);
      res.on('error', () => undefined);
    });
    req.on('error', (err) => {
      if (closedByUs) {
        rejectArmed(new GwctlError('TG_GWCTL_INTERRUPTED', 'trace cancelled'));
        reject(new GwctlError('TG_GWCTL_INTERRUPTED', 'trace cancelled before the request finished'));
      } else fail(target.unreachable(err, { kind: 'admin' }));
    });
    req.end();
  });
  // Callers may await only one of the two; neither must become an unhandled rejection.
  armed.catch(() => undefined);
  finished.catch(() => undefined);
  return {
    armed,
    finished,
    close: () => {
      closedByUs = true;
      req?.destroy();
    },
  };
}
