// Inject mode: the request gwctl sends itself, marked with a header carrying a fresh id that
// the session's CEL match selects, so no other client's request is captured.
import { http } from '@tollgate/kit/node-http';
import type { InjectRequest } from '../curl-args.js';
import type { Target } from '../target/target.js';

export const TRACE_HEADER = 'x-gwctl-trace-id';

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
    const r = http.request(
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
