// Test helpers: real servers on loopback ephemeral ports, configs written to temp files, and
// an in-process gateway whose logs are captured.
import { once } from 'node:events';
import { mkdtemp, rename, writeFile, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { TraceEvent } from '@tollgate/api';
import { readSse } from '@tollgate/kit';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { LogSink, onFreePort, type RawResponse } from '@tollgate/testkit';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { startStandaloneProxy, type StandaloneProxy } from '../src/process/standalone.js';
import type { ProxyProcessOptions } from '../src/process/proxy-process.js';

export { freePort, onFreePort, onFreePorts, startUpstream, LogSink, send, type Upstream, type Handler, type RawResponse } from '@tollgate/testkit';

/** A mock-llm for the whole file, handed to `started` before the first test and closed after the last. */
export function useMockLlm(started: (llm: MockLlm) => void): void {
  let llm: MockLlm | undefined;
  beforeAll(async () => {
    llm = await startMockLlm({ port: 0 });
    started(llm);
  });
  afterAll(async () => {
    await llm?.close();
  });
}

/** What a test pushes here (gateways, servers) is closed after it, last first. */
export function closedAfterEach(): (() => Promise<void>)[] {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return cleanups;
}

export interface TestGateway {
  readonly gateway: StandaloneProxy;
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

/** A config, or a config around the port of its first bind (the gateway picks the port). */
export type GatewayConfig = Record<string, unknown> | ((port: number) => Record<string, unknown>);

/**
 * Starts an in-process gateway. Given a function of the port, it binds a free port and, when
 * another process took that port between the probe and the bind, starts again on another:
 * `gw.port` is the port it got. A config with ports of its own is started as given.
 */
export interface GatewayOptions {
  readonly clock?: () => number;
  readonly traceKeepaliveMs?: number;
  readonly compactMemory?: ProxyProcessOptions['compactMemory'];
  /** Threads serving requests (worker threads run the built proxy: `pnpm build` first). */
  readonly workers?: number;
}

/**
 * TOLLGATE_TEST_PROXY_WORKERS=<n> runs the in-process proxies on n threads (a suite run that
 * way checks what it asserts holds across threads); undefined: the proxy's default (one).
 */
export function testWorkers(): number | undefined {
  const n = Number(process.env.TOLLGATE_TEST_PROXY_WORKERS);
  return Number.isInteger(n) && n > 1 ? n : undefined;
}

/** testWorkers(), except for gateways given a clock, which the worker threads cannot share. */
function defaultWorkers(opts: GatewayOptions): number | undefined {
  return opts.clock ? undefined : testWorkers();
}

/** Requests each thread of a proxy has begun (GET /workers), by worker index; 0 for a thread not serving. */
export async function requestsByThread(adminUrl: string): Promise<number[]> {
  const rows = ((await (await fetch(`${adminUrl}/workers`)).json()) as { workers: { figures: { requestsStarted: number } | null }[] }).workers;
  return rows.map((r) => r.figures?.requestsStarted ?? 0);
}

/**
 * Sends `request(i)` for i = 0, 1, ... (each on a connection of its own: the kernel picks a
 * thread per connection) until every thread of the proxy has begun one since the first;
 * resolves with how many were sent. `max` bounds it: 40 all to one of two threads is 2^-39.
 */
export async function untilEveryThreadServed(adminUrl: string, request: (i: number) => Promise<unknown>, max = 40): Promise<number> {
  const before = await requestsByThread(adminUrl);
  for (let i = 0; i < max; i++) {
    await request(i);
    const now = await requestsByThread(adminUrl);
    if (now.every((n, w) => n > before[w]!)) return i + 1;
  }
  throw new Error(`${max} requests on connections of their own did not reach every thread`);
}

export function startGateway(config: GatewayConfig, opts: GatewayOptions = {}): Promise<TestGateway> {
  if (typeof config === 'function') return onFreePort((port) => startGatewayWith(config(port), opts));
  return startGatewayWith(config, opts);
}

async function startGatewayWith(config: Record<string, unknown>, opts: GatewayOptions): Promise<TestGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-test-'));
  const file = join(dir, 'config.yaml');
  await writeFile(file, stringify(config));
  const logs = new LogSink();
  let gateway: StandaloneProxy;
  try {
    gateway = await startStandaloneProxy({ file, adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logDestination: logs, clock: opts.clock, traceKeepaliveMs: opts.traceKeepaliveMs, compactMemory: opts.compactMemory, workers: opts.workers ?? defaultWorkers(opts) });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const binds = [...(config.binds as { port: number }[]), ...((config.tlsBinds as { port: number }[] | undefined) ?? [])];
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
        once(gateway.source, 'reloaded').then(() => 'reloaded' as const),
        once(gateway.source, 'refused').then(() => 'refused' as const),
      ]);
      // Written beside the file and renamed over it, so the watcher never reads a half-written
      // file (a truncate and a write can reach it as two changes on a busy machine).
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, typeof next === 'string' || Buffer.isBuffer(next) ? next : stringify(next));
      await rename(tmp, file);
      return done;
    },
    close: async () => {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export function echoed(r: RawResponse): { method: string; url: string; headers: Record<string, string>; body: string } {
  return JSON.parse(r.body) as { method: string; url: string; headers: Record<string, string>; body: string };
}

export interface TraceStream {
  readonly res: IncomingMessage;
  /** Resolves with every event once the stream ends. */
  readonly events: Promise<TraceEvent[]>;
  /** Resolves with the opening comment (the session is armed). */
  readonly armed: Promise<string>;
}

/** Opens GET /debug/trace on an admin server and reads its events as they come. */
export function openTrace(adminUrl: string, query = ''): Promise<TraceStream> {
  return new Promise((resolve, reject) => {
    httpRequest(`${adminUrl}/debug/trace${query}`, (res) => {
      let resolveArmed!: (s: string) => void;
      const armed = new Promise<string>((r) => (resolveArmed = r));
      // A stream that breaks, or an event that is not JSON, rejects: a test never reads a
      // broken trace as a short one.
      const events = (async () => {
        const out: TraceEvent[] = [];
        for await (const item of readSse(res)) {
          if (item.type !== 'event') continue;
          if (item.comments.length) resolveArmed(`: ${item.comments.join('\n')}`);
          if (item.data !== null) out.push(JSON.parse(item.data) as TraceEvent);
        }
        return out;
      })();
      // Awaited by the tests that read the events; a test that only arms a session does not.
      events.catch(() => undefined);
      resolve({ res, events, armed });
    })
      .on('error', reject)
      .end();
  });
}
