// Test helpers: a real standalone proxy (in-process, admin on an ephemeral port) in front of
// the mock LLM, gwctl's main() with captured streams, the built binary, and a server that
// follows the controller's /logging contract (docs/admin-api.md), built from the same kit
// route the controller's admin server uses.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { AdminServer, jsonLoggingRoutes, LogControl } from '@tollgate/kit';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { freePort, onFreePort } from '@tollgate/testkit';
import { startStandaloneProxy, type StandaloneProxy } from '@tollgate/proxy';
import { main, type Io } from '../src/cli.js';

export const BIN = fileURLToPath(new URL('../bin/gwctl.js', import.meta.url));
export const DIST = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export function requireBuild(): void {
  if (!existsSync(DIST)) throw new Error(`${DIST} is missing: run \`pnpm build\` at the repository root first`);
}

export { freePort };

class Sink extends Writable {
  text = '';
  readonly waiters: { re: RegExp; resolve: () => void }[] = [];
  override _write(chunk: Buffer | string, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    for (const w of this.waiters.splice(0)) {
      if (w.re.test(this.text)) w.resolve();
      else this.waiters.push(w);
    }
    cb();
  }
  /** Resolves once the captured text matches `re`. */
  waitFor(re: RegExp): Promise<void> {
    if (re.test(this.text)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ re, resolve }));
  }
}

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Captured {
  readonly io: Io;
  readonly stdout: Sink;
  readonly stderr: Sink;
}

/** Streams for main(); `tty` makes stderr claim to be a terminal (gwctl then reports progress there). */
export function capture(opts: { env?: NodeJS.ProcessEnv; tty?: boolean } = {}): Captured {
  const stdout = new Sink();
  const stderr = Object.assign(new Sink(), { isTTY: opts.tty ?? false });
  const stdin = new PassThrough();
  return { io: { stdout, stderr, stdin, env: opts.env ?? { HOME: '/nonexistent-home' } }, stdout, stderr };
}

/** Runs gwctl in-process. The default environment has no kubeconfig. */
export async function gwctl(args: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const c = capture(opts);
  const code = await main(args, c.io);
  return { code, stdout: c.stdout.text, stderr: c.stderr.text };
}

/** Runs a program to its end, with its output. */
export async function runProgram(command: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code: code ?? -1, stdout, stderr };
}

/** Runs the built binary. */
export function gwctlBin(args: string[], env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: '/nonexistent-home' }): Promise<Run> {
  return runProgram(process.execPath, [BIN, ...args], { env });
}

export interface Proxy {
  readonly gateway: StandaloneProxy;
  readonly port: number;
  readonly adminAddr: string;
  readonly mock: MockLlm;
  readonly file: string;
  /** Sends a request to the listener (Host header as given). */
  send(path: string, opts?: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

/** A standalone proxy: listener `main` with route `chat` (host api.example.com, /v1) to the mock LLM. */
export async function startProxy(opts: { traceKeepaliveMs?: number } = {}): Promise<Proxy> {
  const mock = await startMockLlm({ port: 0 });
  const dir = await mkdtemp(join(tmpdir(), 'gwctl-test-'));
  const file = join(dir, 'config.json');
  const config = (port: number) => ({
    binds: [
      {
        port,
        listeners: [
          {
            name: 'main',
            protocol: 'HTTP',
            policies: { traffic: { rateLimit: { local: [{ requests: 1000, unit: 'Minutes' }] } } },
            routes: [
              {
                name: 'chat',
                hostnames: ['api.example.com'],
                matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
                policies: { traffic: { rateLimit: { local: [{ requests: 500, unit: 'Minutes', burst: 5 }, { tokens: 100000, unit: 'Hours' }, { tokens: 1000000, unit: 'Days', by: { type: 'Header', name: 'x-team' } }] } } },
                backends: [{ host: `127.0.0.1:${mock.port}` }],
              },
              {
                name: 'models',
                matches: [{ path: { type: 'Exact', value: '/v1/models' }, method: 'GET' }],
                policies: {
                  traffic: {
                    authorization: { rules: [{ name: 'no-bots', action: 'Deny', expression: '"x-bot" in request.headers' }] },
                    transformation: { request: { headers: { set: [{ name: 'x-route', value: '"models"' }], remove: ['x-debug'] } }, response: { headers: { remove: ['x-internal'] } } },
                  },
                },
                backends: [{ host: `127.0.0.1:${mock.port}` }],
              },
            ],
          },
        ],
      },
    ],
  });
  const logs = new Writable({ write: (_c, _e, cb) => cb() });
  // The listener port is probed, then bound by the proxy: one another process took meanwhile
  // is replaced by a fresh one.
  const { port, gateway } = await onFreePort(async (port) => {
    await writeFile(file, JSON.stringify(config(port)));
    const gateway = await startStandaloneProxy({ file, adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logDestination: logs, watch: false, traceKeepaliveMs: opts.traceKeepaliveMs });
    return { port, gateway };
  });
  return {
    gateway,
    port,
    adminAddr: gateway.admin.address,
    mock,
    file,
    send: (path, opts = {}) =>
      new Promise((resolve, reject) => {
        const req = httpRequest(`http://127.0.0.1:${port}${path}`, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end(opts.body);
      }),
    close: async () => {
      await gateway.close();
      await mock.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const CHAT_BODY = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello there' }] });

export const CONTROLLER_COMPONENTS = ['tollgate/syncer', 'tollgate/translator', 'gateway-controller', 'deployer', 'default'] as const;

/** An admin server with the controller's /logging contract (docs/admin-api.md), from @tollgate/kit. */
export async function startFakeController(): Promise<{ addr: string; readonly levels: Record<string, string>; close(): Promise<void> }> {
  const logs = new LogControl({ components: CONTROLLER_COMPONENTS, destination: new Writable({ write: (_c, _e, cb) => cb() }), componentKey: 'component' });
  const server = new AdminServer({ host: '127.0.0.1', port: 0, title: 'Tollgate controller admin' });
  jsonLoggingRoutes(server.app, { logs });
  const addr = await server.listen();
  return {
    addr,
    get levels() {
      return logs.levels();
    },
    close: () => server.close(),
  };
}
