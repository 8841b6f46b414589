// HTTP to the admin server: plain requests (/config_dump, /logging) and event streams.
// Connection failures go through the target, which knows whether a port-forward or the
// server itself is to blame; error answers become ADMIN_ERROR with the server's own text.
import { request as httpRequest, type IncomingMessage } from 'node:http';
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

/**
 * Opens an event stream (`accept: text/event-stream`); resolves with the response once the
 * server answered 200. Aborting `signal` disconnects.
 */
export function adminStream(target: Target, path: string, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${target.adminUrl}${path}`, { agent: false, headers: { accept: 'text/event-stream' }, signal }, (res) => {
      if (res.statusCode === 200) return resolve(res);
      readBody(res).then(
        (body) => reject(adminError('GET', path, { status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body })),
        (err: unknown) => reject(target.unreachable(err, { kind: 'admin' })),
      );
    });
    req.on('error', (err) => reject(target.unreachable(err, { kind: 'admin' })));
    req.end();
  });
}
