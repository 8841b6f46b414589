// `gwctl trace`: arm a trace session on the admin server and show the next request's events,
// in the terminal UI or as JSON Lines (--raw). Inject mode (--port <p> -- <url> [curl args])
// arms the session with a CEL match on a header carrying a fresh UUID, waits until the
// session is armed, then sends the request itself, so no other client's request is captured.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { TraceEvent } from '@tollgate/api';
import { openTrace, type TraceSession } from '../admin-client.js';
import { parseCurlArgs, type InjectRequest } from '../curl-args.js';
import { GwctlError, describe, usage } from '../errors.js';
import { write, type Io } from '../io.js';
import { gatewayTarget, withTarget, type TargetFlags } from '../target/resolve.js';
import type { Target } from '../target/target.js';

export const TRACE_HEADER = 'x-gwctl-trace-id';

export interface TraceFlags extends TargetFlags {
  raw?: boolean;
  port?: number;
}

export interface InjectResponse {
  readonly status: number;
  readonly statusMessage: string;
  readonly httpVersion: string;
  readonly rawHeaders: readonly string[];
  readonly body: Buffer;
}

/** The CEL expression that matches only the request gwctl sends. */
export function matchFor(id: string): string {
  return `request.headers["${TRACE_HEADER}"] == "${id}"`;
}

/** Sends the inject-mode request to listener `port` with the URL's host as Host header. */
export async function sendInject(target: Target, port: number, req: InjectRequest, traceId: string, signal?: AbortSignal): Promise<InjectResponse> {
  const addr = await target.listener(port);
  const headers: [string, string][] = [['host', req.url.host], ...req.headers, [TRACE_HEADER, traceId]];
  if (req.body) headers.push(['content-length', String(req.body.length)]);
  return new Promise((resolve, reject) => {
    const r = httpRequest(
      `http://${addr}${req.url.pathname}${req.url.search}`,
      { method: req.method, headers: headers.flat(), agent: false, signal, setHost: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, statusMessage: res.statusMessage ?? '', httpVersion: res.httpVersion, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
        );
        res.on('error', (err) => reject(target.unreachable(err, { kind: 'listener', port })));
      },
    );
    r.on('error', (err) => reject(target.unreachable(err, { kind: 'listener', port })));
    r.end(req.body);
  });
}

/** The response as curl prints it: the body, after the status line and headers with -i. */
export function renderResponse(res: InjectResponse, include: boolean): Buffer {
  if (!include) return res.body;
  const lines = [`HTTP/${res.httpVersion} ${res.status} ${res.statusMessage}`];
  for (let i = 0; i < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), res.body]);
}

export interface TracePlan {
  readonly inject: { readonly port: number; readonly request: InjectRequest } | null;
}

export async function planTrace(flags: TraceFlags, curlArgs: readonly string[] | undefined): Promise<TracePlan> {
  if (flags.port === undefined && curlArgs !== undefined) throw usage('inject mode needs --port <listener_port> before --');
  if (flags.port !== undefined && curlArgs === undefined) throw usage('--port needs a request after it: --port <listener_port> -- <url> [curl args]');
  if (flags.port === undefined || curlArgs === undefined) return { inject: null };
  return { inject: { port: flags.port, request: await parseCurlArgs(curlArgs) } };
}

function waitingText(target: Target, plan: TracePlan): string {
  return plan.inject
    ? `Trace armed on ${target.description}; sending ${plan.inject.request.method} ${plan.inject.request.url.href} to listener port ${plan.inject.port}…`
    : `Trace armed on ${target.description}; waiting for the next request from any client…`;
}

async function rawTrace(target: Target, plan: TracePlan, io: Io): Promise<void> {
  let session: TraceSession | undefined;
  try {
    const response = await drive(target, plan, {
      onEvent: (e) => write(io.stdout, JSON.stringify(e)),
      onArmed: (text) => {
        if (io.stderr.isTTY) write(io.stderr, `gwctl: ${text}`);
      },
      signal: new AbortController().signal,
      session: (s) => (session = s),
    });
    // stdout carries only events; the response goes to stderr.
    if (response && plan.inject) io.stderr.write(renderResponse(response, plan.inject.request.include));
  } finally {
    session?.close();
  }
}

export async function trace(ref: string | undefined, flags: TraceFlags, curlArgs: readonly string[] | undefined, io: Io): Promise<number> {
  const plan = await planTrace(flags, curlArgs);
  if (!flags.raw && !(io.stdin.isTTY && io.stdout.isTTY)) {
    throw usage('the trace terminal UI needs a terminal on stdin and stdout; use --raw for JSON Lines');
  }
  return withTarget(gatewayTarget(ref, flags, io), async (target) => {
    if (flags.raw) {
      await rawTrace(target, plan, io);
      return 0;
    }
    // Both ends are terminals, so the UI is interactive even where CI is set: ink reads CI when
    // it loads and would otherwise draw only the last frame.
    delete process.env.CI;
    delete process.env.CONTINUOUS_INTEGRATION;
    const { runTraceUi } = await import('../tui/run.js');
    return runTraceUi(target, plan, io, ref ?? target.description);
  });
}

/** Shared by the UI runner: arm, send (inject mode) and wait for the stream to finish. */
export async function drive(
  target: Target,
  plan: TracePlan,
  hooks: { onEvent: (e: TraceEvent) => void; onArmed: (text: string) => void | Promise<void>; signal: AbortSignal; session: (s: TraceSession) => void },
): Promise<InjectResponse | undefined> {
  const id = randomUUID();
  const session = openTrace(target, { match: plan.inject ? matchFor(id) : undefined, onEvent: hooks.onEvent });
  hooks.session(session);
  await session.armed;
  await hooks.onArmed(waitingText(target, plan));
  let response: InjectResponse | undefined;
  if (plan.inject) {
    try {
      response = await sendInject(target, plan.inject.port, plan.inject.request, id, hooks.signal);
    } catch (err) {
      if (hooks.signal.aborted) throw new GwctlError('TG_GWCTL_INTERRUPTED', 'cancelled');
      session.close();
      throw err instanceof GwctlError ? err : new GwctlError('TG_GWCTL_REQUEST_FAILED', describe(err), { cause: err });
    }
  }
  await session.finished;
  return response;
}
