// `tollgate --controller ... --gateway ...`: the binary in cluster mode against the
// controller's real snapshot stream server, and its usage errors (exit 2, one line).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { standaloneToSnapshot, validateStandaloneConfig } from '@tollgate/api';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SnapshotStore, SnapshotStreamServer, StreamMetrics } from '@tollgate/controller';
import pino from 'pino';
import { Registry } from 'prom-client';
import { until } from '@tollgate/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { echoed, freePort, onFreePort, send, simpleConfig, startUpstream } from './helpers.js';
import { streamTls } from './support/stream-tls.js';
import { hostAsPodName } from '../src/cli.js';

function streamTlsCa(): string {
  const t = streamTls('edge/public');
  t.close();
  return t.ca.certificate;
}

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));
const OPS = ['--admin-addr', '127.0.0.1:0', '--metrics-addr', '127.0.0.1:0'];
const children: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  while (cleanups.length) await cleanups.pop()!();
});

async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH, ...env } });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}

describe('tollgate in cluster mode', () => {
  it('serves the snapshot of its Gateway from the controller, identified by the downward API variables', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const store = new SnapshotStore();
    const tls = streamTls('edge/public');
    cleanups.push(() => tls.close());
    const server = new SnapshotStreamServer({ addr: { host: '127.0.0.1', port: 0 }, security: tls.server, store, metrics: new StreamMetrics(new Registry()), log: pino({ level: 'silent' }) });
    await server.start();
    cleanups.push(() => server.stop());
    const child = spawn(process.execPath, [BIN, '--controller', `127.0.0.1:${server.port}`, '--controller-token', tls.proxy.tokenFile, ...OPS, '--readiness-addr', '127.0.0.1:0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, TOLLGATE_GATEWAY: 'edge/public', TOLLGATE_CONTROLLER_CA: tls.proxy.caFile, POD_NAME: 'public-7f9c', POD_NAMESPACE: 'edge' },
    });
    children.push(child);
    const logged = createInterface({ input: child.stdout });
    const readiness = new Promise<string>((resolve) => logged.on('line', (line) => {
      const r = (JSON.parse(line) as { readiness?: string }).readiness;
      if (r) resolve(r);
    }));
    await expect.poll(() => server.proxies().get('edge/public')?.[0], { timeout: 20_000 }).toMatchObject({ pod: 'public-7f9c', podNamespace: 'edge' });
    // The snapshot names a free port; one NACKed because another process took the port in
    // the meantime is offered again on another.
    const { port, snapshot } = await onFreePort(async (port) => {
      const snapshot = standaloneToSnapshot(validateStandaloneConfig(simpleConfig(port, [{ name: 'a', backends: [{ host: up.host }] }]), 'test'), { kind: 'controller', gateway: 'edge/public' });
      store.offer(new Map([['edge/public', snapshot]]));
      const proxy = () => server.proxies().get('edge/public')?.[0];
      await until(() => proxy()?.ackedVersion === snapshot.version || proxy()?.lastNack?.version === snapshot.version, { what: `an ACK or NACK of ${snapshot.version}`, timeoutMs: 60_000 });
      if (proxy()?.ackedVersion !== snapshot.version) throw new Error(proxy()?.lastNack?.error ?? 'NACKed');
      return { port, snapshot };
    });
    expect(server.proxies().get('edge/public')?.[0]?.ackedVersion).toBe(snapshot.version);
    expect((await send(`http://${await readiness}/healthz/ready`)).status).toBe(200);
    expect(echoed(await send(`http://127.0.0.1:${port}/hello`)).url).toBe('/hello');
    expect(tls.checks).toEqual([{ token: 'token-of-the-proxy', gateway: 'edge/public' }]);
  });

  /** A plaintext snapshot stream offering edge/public one route, and a proxy of it started with `env`. */
  async function plaintextProxy(env: NodeJS.ProcessEnv): Promise<{ server: SnapshotStreamServer; child: ChildProcess & { stdout: NodeJS.ReadableStream } }> {
    const store = new SnapshotStore();
    const server = new SnapshotStreamServer({ addr: { host: '127.0.0.1', port: 0 }, store, metrics: new StreamMetrics(new Registry()), log: pino({ level: 'silent' }) });
    await server.start();
    cleanups.push(() => server.stop());
    const port = await freePort();
    store.offer(new Map([['edge/public', standaloneToSnapshot(validateStandaloneConfig(simpleConfig(port, [{ name: 'a', backends: [{ host: '127.0.0.1:1' }] }]), 'test'), { kind: 'controller', gateway: 'edge/public' })]]));
    const child = spawn(process.execPath, [BIN, '--controller', `127.0.0.1:${server.port}`, '--gateway', 'edge/public', '--controller-plaintext', ...OPS, '--readiness-addr', '127.0.0.1:0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, POD_NAME: 'dev-0', ...env },
    });
    children.push(child);
    return { server, child };
  }

  it('serves over plaintext only when told so, for development', async () => {
    const { server, child } = await plaintextProxy({});
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await expect.poll(() => server.proxies().get('edge/public')?.[0]?.pod, { timeout: 20_000 }).toBe('dev-0');
    await expect.poll(() => out).toContain('neither encrypted nor authenticated (--controller-plaintext); for development only');
  });

  it('takes its process settings from TOLLGATE_SETTINGS, as the deployer renders the Gateway parameters', async () => {
    const { server, child } = await plaintextProxy({ TOLLGATE_SETTINGS: '{"maxBufferedRequestBytes":134217728,"maxConnectionsPerBind":1000,"requestBodyTimeout":"2m"}' });
    const admin = new Promise<string>((resolve) =>
      createInterface({ input: child.stdout }).on('line', (line) => {
        const a = (JSON.parse(line) as { admin?: string }).admin;
        if (a) resolve(a);
      }),
    );
    await expect.poll(() => server.proxies().get('edge/public')?.[0]?.ackedVersion, { timeout: 20_000 }).toBeDefined();
    const dump = JSON.parse((await send(`http://${await admin}/config_dump`)).body) as { settings: Record<string, number> };
    expect(dump.settings).toMatchObject({ maxBufferedRequestBytes: 134217728, maxConnectionsPerBind: 1000, requestBodyTimeoutMs: 120_000, maxRequestBodyBytes: 8388608 });
  });

  it('outside a pod, says hello with its host name made a pod name the controller takes', async () => {
    expect(hostAsPodName('Dev_Box.local')).toBe('dev-box-local');
    expect(hostAsPodName('__')).toBe('proxy');
    expect(hostAsPodName(`${'x'.repeat(70)}`)).toBe('x'.repeat(63));
    const { server } = await plaintextProxy({ POD_NAME: '' });
    await expect.poll(() => server.proxies().get('edge/public')?.[0]?.pod, { timeout: 20_000 }).toBe(hostAsPodName(hostname()));
  });

  const dir = mkdtempSync(join(tmpdir(), 'tg-cli-cluster-'));
  const ca = join(dir, 'ca.crt');
  const token = join(dir, 'token');
  const empty = join(dir, 'empty');
  writeFileSync(ca, streamTlsCa());
  writeFileSync(token, 'a-token');
  writeFileSync(empty, '');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const tlsFlags = ['--controller-ca', ca, '--controller-token', token];
  it.each([
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public'], {}, "cluster mode needs --controller-ca <file> (or TOLLGATE_CONTROLLER_CA): the CA of the controller's snapshot stream"],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-ca', join(dir, 'nope.crt')], {}, `--controller-ca: cannot read ${join(dir, 'nope.crt')} (no such file); mount the tollgate-ca ConfigMap (key ca.crt)`],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-ca', token], {}, `--controller-ca: ${token} is not a PEM certificate`],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-ca', ca], {}, '--controller-token (default): cannot read /var/run/secrets/tollgate/token (no such file); the pod needs a projected ServiceAccount token volume with audience tollgate'],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-ca', ca], { TOLLGATE_CONTROLLER_TOKEN: empty }, `TOLLGATE_CONTROLLER_TOKEN: ${empty} is empty`],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-plaintext'], { TOLLGATE_CONTROLLER_CA: ca }, 'TOLLGATE_CONTROLLER_CA and --controller-plaintext (TOLLGATE_CONTROLLER_PLAINTEXT) contradict each other'],
    [['--controller', '127.0.0.1:9978', ...tlsFlags], {}, 'cluster mode needs --gateway <namespace>/<name>'],
    [['--controller', '127.0.0.1:9978', '--gateway', 'public', ...tlsFlags], {}, '--gateway: got "public"; expected <namespace>/<name>'],
    [['--controller', 'nope', '--gateway', 'edge/public', ...tlsFlags], {}, '--controller: got "nope"'],
    [['--gateway', 'edge/public'], {}, '--gateway is for cluster mode; give --controller <host:port> too'],
    [['--file', 'x.yaml', '--controller', '127.0.0.1:9978', '--gateway', 'edge/public', ...tlsFlags], {}, '--file and --controller are two modes'],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public'], { TOLLGATE_CONTROLLER_PLAINTEXT: 'yes' }, 'TOLLGATE_CONTROLLER_PLAINTEXT: got "yes"; use true or false'],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-plaintext'], { TOLLGATE_SETTINGS: '{"maxConnectionsPerBind":0}' }, 'TOLLGATE_SETTINGS: maxConnectionsPerBind: got 0'],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-plaintext'], { TOLLGATE_SETTINGS: '{"maxBufferedRequestBytes":4096}' }, 'TOLLGATE_SETTINGS: maxBufferedRequestBytes: got 4096; it must be at least maxRequestBodyBytes'],
    [['--controller', '127.0.0.1:9978', '--gateway', 'edge/public', '--controller-plaintext'], { TOLLGATE_SETTINGS: '{"maxBuffered' }, 'TOLLGATE_SETTINGS: not JSON'],
  ] as const)('usage error %j exits 2', async (args, env, message) => {
    const r = await run([...args], env);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(r.stderr).toContain(message);
  });
});
