// Test helpers: real servers on loopback ephemeral ports, configs written to temp files, and
// an in-process gateway whose logs are captured.
import { once } from 'node:events';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { stringify } from 'yaml';
import { Gateway } from '../src/gateway.js';

export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  s.close();
  await once(s, 'close');
  return port;
}

export interface Upstream {
  readonly port: number;
  readonly host: string;
  readonly server: Server;
  readonly requests: IncomingMessage[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

/** An upstream that echoes the request as JSON unless given a handler. */
export async function startUpstream(handler?: Handler, opts: { readBody?: boolean } = {}): Promise<Upstream> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    if (opts.readBody === false && handler) return handler(req, res, Buffer.alloc(0));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (handler) return handler(req, res, body);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString() }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host: `127.0.0.1:${port}`,
    server,
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}

export class LogSink extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    for (const line of chunk.toString().split('\n')) if (line.trim()) this.lines.push(JSON.parse(line) as Record<string, unknown>);
    cb();
  }
  messages(): string[] {
    return this.lines.map((l) => String(l.msg));
  }
}

export interface TestGateway {
  readonly gateway: Gateway;
  readonly port: number;
  readonly url: string;
  readonly adminUrl: string;
  readonly file: string;
  readonly logs: LogSink;
  /** Rewrites the config file and resolves when the gateway has applied (or refused) it. */
  rewrite(config: unknown): Promise<'reloaded' | 'refused'>;
  close(): Promise<void>;
}

/** A config with one bind on `port` and one listener holding `routes`. */
export function simpleConfig(port: number, routes: unknown[], listener: Record<string, unknown> = {}): Record<string, unknown> {
  return { binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTP', ...listener, routes }] }] };
}

export async function startGateway(config: Record<string, unknown>, opts: { clock?: () => number; traceKeepaliveMs?: number } = {}): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-test-'));
  const file = join(dir, 'config.yaml');
  await writeFile(file, stringify(config));
  const logs = new LogSink();
  const gateway = await Gateway.start({ file, adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logDestination: logs, clock: opts.clock, traceKeepaliveMs: opts.traceKeepaliveMs });
  const binds = config.binds as { port: number }[];
  const port = binds[0]!.port;
  return {
    gateway,
    port,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://${gateway.admin.address}`,
    file,
    logs,
    rewrite: async (next) => {
      const done = Promise.race([
        once(gateway.watcher!, 'reloaded').then(() => 'reloaded' as const),
        once(gateway.watcher!, 'refused').then(() => 'refused' as const),
      ]);
      await writeFile(file, typeof next === 'string' ? next : stringify(next));
      return done;
    },
    close: async () => {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A plain HTTP request (node:http, so Host and hop-by-hop headers go out as given). */
export function send(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

export function echoed(r: RawResponse): { method: string; url: string; headers: Record<string, string>; body: string } {
  return JSON.parse(r.body) as { method: string; url: string; headers: Record<string, string>; body: string };
}
