// The real global rate limit service for tests: redis-server and envoyproxy/ratelimit (the
// reference Envoy RLS v3 service), started as local processes on free loopback ports with a
// runtime config directory in a temp dir, and stopped after the suite (also on failure).
// scripts/install-test-tools.sh installs both: redis-server from Debian, the service with
// `go install` of the commit pinned in e2e/tools.json (envoyRatelimit) into the tool cache.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { createConnection } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, onFreePort, onFreePorts } from '../helpers.js';
import { Proc, readyOrStopped } from './process.js';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const INSTALL_COMMAND = 'bash scripts/install-test-tools.sh';

function cacheDir(): string {
  return process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate');
}

function ratelimitVersion(): string {
  const tools = JSON.parse(readFileSync(join(REPO_ROOT, 'e2e/tools.json'), 'utf8')) as Record<string, unknown>;
  const v = tools.envoyRatelimit;
  if (typeof v !== 'string') throw new Error('e2e/tools.json has no envoyRatelimit version');
  return v;
}

function onPath(name: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin', '/usr/local/bin'];
  for (const dir of dirs) {
    if (!dir) continue;
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  return null;
}

export interface RlsBinaries {
  readonly redisServer: string;
  readonly ratelimit: string;
}

/** Where the binaries are: TOLLGATE_REDIS_SERVER / TOLLGATE_RATELIMIT override the defaults. */
export function rlsBinaries(): { found: RlsBinaries | null; missing: string[] } {
  const redisServer = process.env.TOLLGATE_REDIS_SERVER ?? onPath('redis-server');
  const ratelimit = process.env.TOLLGATE_RATELIMIT ?? join(cacheDir(), `ratelimit-${ratelimitVersion()}`, 'ratelimit');
  const missing: string[] = [];
  if (!redisServer || !existsSync(redisServer)) missing.push('redis-server: not on PATH (Debian package redis-server)');
  if (!existsSync(ratelimit)) missing.push(`envoyproxy/ratelimit: ${ratelimit}`);
  return { found: missing.length ? null : { redisServer: redisServer!, ratelimit }, missing };
}

/**
 * Whether a suite on the real service can run. In CI (CI=true) a missing binary is an error,
 * so the suite fails rather than passing by skipping; elsewhere it is skipped with a message
 * saying how to install it.
 */
export function rlsAvailability(): { run: boolean; reason?: string } {
  const { missing } = rlsBinaries();
  if (!missing.length) return { run: true };
  const message = `global rate limit test tools missing (run \`${INSTALL_COMMAND}\` from the repository root):\n  ${missing.join('\n  ')}`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping global rate limit suite: ${message}`);
  return { run: false, reason: message };
}

export { freePort };

/** PING over RESP; true on +PONG. */
function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let data = '';
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('error', () => done(false));
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.on('data', (b: Buffer) => {
      data += b.toString('latin1');
      if (data.includes('\r\n')) done(data.startsWith('+PONG'));
    });
  });
}

/**
 * grpc.health.v1.Health/Check on the gRPC port; true when SERVING. The request (service "")
 * is the empty message; the response is field 1 (status) as a varint, SERVING = 1.
 */
function grpcHealthy(address: string): Promise<boolean> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise<boolean>((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      () => Buffer.alloc(0),
      (b: Buffer) => b,
      {},
      new grpc.Metadata(),
      { deadline: Date.now() + 1000 },
      (err, res) => resolve(!err && res !== undefined && res.equals(Buffer.from([0x08, 0x01]))),
    );
  }).finally(() => client.close());
}

/** A reply of Redis (RESP2): a string, an integer, null, or an array of those. */
export type RedisReply = string | number | null | RedisReply[];

/**
 * One command to redis-server over RESP2, for tests that read what the rate limit service
 * stored (its counters are keys `<domain>_<key>_<value>_..._<window start>`).
 */
export function redisCommand(port: number, ...args: string[]): Promise<RedisReply> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ host: '127.0.0.1', port });
    let data = Buffer.alloc(0);
    sock.setTimeout(5000, () => sock.destroy(new Error('redis: no reply within 5s')));
    sock.once('error', reject);
    sock.once('connect', () => sock.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`));
    sock.on('data', (b: Buffer) => {
      data = Buffer.concat([data, b]);
      const parsed = parseReply(data, 0);
      if (!parsed) return;
      sock.destroy();
      if (parsed.error) reject(new Error(`redis: ${parsed.error}`));
      else resolve(parsed.value);
    });
  });
}

/** Parses one reply at `at`; null while incomplete. */
function parseReply(buf: Buffer, at: number): { value: RedisReply; end: number; error?: string } | null {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const line = buf.toString('utf8', at + 1, eol);
  switch (String.fromCharCode(buf[at]!)) {
    case '+':
      return { value: line, end: eol + 2 };
    case '-':
      return { value: null, end: eol + 2, error: line };
    case ':':
      return { value: Number(line), end: eol + 2 };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, end: eol + 2 };
      if (buf.length < eol + 2 + n + 2) return null;
      return { value: buf.toString('utf8', eol + 2, eol + 2 + n), end: eol + 2 + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, end: eol + 2 };
      const out: RedisReply[] = [];
      let end = eol + 2;
      for (let i = 0; i < n; i++) {
        const item = parseReply(buf, end);
        if (!item) return null;
        out.push(item.value);
        end = item.end;
      }
      return { value: out, end };
    }
    default:
      return { value: null, end: buf.length, error: `unexpected reply ${JSON.stringify(line)}` };
  }
}

/** The counters the rate limit service keeps in Redis whose key starts with `prefix`, key -> count. */
export async function counters(rls: RlsService, prefix: string): Promise<Record<string, number>> {
  const keys = (await redisCommand(rls.redisPort, 'KEYS', `${prefix}*`)) as string[];
  const out: Record<string, number> = {};
  for (const k of keys.sort()) out[k] = Number(await redisCommand(rls.redisPort, 'GET', k));
  return out;
}

export interface RlsOptions {
  /** One envoyproxy/ratelimit YAML config per domain (the file content; `domain:` must match). */
  readonly configs: Readonly<Record<string, string>>;
  /** LIMIT_RESPONSE_HEADERS_ENABLED: the service adds RateLimit-Limit/-Remaining/-Reset headers. */
  readonly responseHeaders?: boolean;
  /** The address the gRPC service binds (default 127.0.0.1); redis and the rest stay on loopback. */
  readonly grpcHost?: string;
}

export interface RlsService {
  /** `<grpcHost>:<grpc port>`: the gateway's rateLimit.global.service. */
  readonly address: string;
  readonly grpcPort: number;
  readonly redisPort: number;
  /** Stops the ratelimit service only (redis keeps its counters); idempotent. */
  stopService(): Promise<void>;
  /** Starts the ratelimit service again on the same ports after stopService(); resolves when it serves. */
  restartService(): Promise<void>;
  /** Stops both and removes the temp dir; idempotent. */
  stop(): Promise<void>;
}

/** Starts redis-server and envoyproxy/ratelimit; both are ready when this resolves. */
export async function startRls(bins: RlsBinaries, opts: RlsOptions): Promise<RlsService> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-rls-'));
  const grpcHost = opts.grpcHost ?? '127.0.0.1';
  const procs: Proc[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // Neither server can report a port it picked: each is given probed ports, and started
    // again on fresh ones when it exits because another process took one of them meanwhile.
    const redisPort = await onFreePort(async (port) => {
      const redis = new Proc(
        'redis-server',
        spawn(
          bins.redisServer,
          ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning', '--daemonize', 'no'],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        ),
      );
      await readyOrStopped(redis, procs, 'PONG', () => redisPing(port));
      return port;
    });

    // RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config/<domain>.yaml, read once at start.
    const configDir = join(dir, 'runtime', 'ratelimit', 'config');
    await mkdir(configDir, { recursive: true });
    for (const [domain, yaml] of Object.entries(opts.configs)) await writeFile(join(configDir, `${domain}.yaml`), yaml);

    const serviceEnv = ([grpcPort, httpPort, debugPort]: number[]): NodeJS.ProcessEnv => ({
      PATH: process.env.PATH ?? '',
      HOME: dir,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'text',
      USE_STATSD: 'false',
      USE_DOG_STATSD: 'false',
      USE_PROMETHEUS: 'false',
      BACKEND_TYPE: 'redis',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_TYPE: 'SINGLE',
      REDIS_URL: `127.0.0.1:${redisPort}`,
      HOST: '127.0.0.1',
      PORT: String(httpPort),
      GRPC_HOST: grpcHost,
      GRPC_PORT: String(grpcPort),
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: String(debugPort),
      RUNTIME_ROOT: join(dir, 'runtime'),
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_WATCH_ROOT: 'false',
      RUNTIME_IGNOREDOTFILES: 'true',
      HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: 'true',
      // Fixed windows, no jitter on key expiry, no local over-limit cache: counts are exact.
      EXPIRATION_JITTER_MAX_SECONDS: '0',
      LOCAL_CACHE_SIZE_IN_BYTES: '0',
      TRACING_ENABLED: 'false',
      LIMIT_RESPONSE_HEADERS_ENABLED: opts.responseHeaders ? 'true' : 'false',
    });
    let service: Proc | null = null;
    const startService = async (ports: number[]): Promise<void> => {
      if (service?.running) throw new Error('envoyproxy/ratelimit is already running');
      const p = new Proc('envoyproxy/ratelimit', spawn(bins.ratelimit, [], { env: serviceEnv(ports), cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
      service = p;
      await readyOrStopped(p, procs, 'SERVING gRPC health check', () => grpcHealthy(`${grpcHost}:${ports[0]}`));
    };
    const ports = await onFreePorts(3, async (ports) => {
      await startService(ports);
      return ports;
    });
    const grpcPort = ports[0]!;

    return {
      address: `${grpcHost}:${grpcPort}`,
      grpcPort,
      redisPort,
      stopService: async () => {
        await service?.stop();
      },
      // The same ports again: the gateway's config names the gRPC one.
      restartService: () => startService(ports),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
