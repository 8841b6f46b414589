// The controller's admin API over real HTTP: the /logging contract of docs/admin-api.md
// (the same requests gwctl's tests make of its stand-in), `gwctl controller log` against it,
// /snapshots with secrets redacted, /memory and pprof.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Secret, type ProxySnapshot } from '@tollgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminServer } from '../src/admin/server.js';
import { COMPONENTS, createLogs, type Logs } from '../src/log/components.js';
import { SnapshotStore } from '../src/snapshots/store.js';

const GWCTL = fileURLToPath(new URL('../../gwctl/bin/gwctl.js', import.meta.url));

const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    cb();
  },
});

let server: AdminServer;
let base: string;
let logs: Logs;
const store = new SnapshotStore();

beforeAll(async () => {
  logs = createLogs('info', sink);
  server = new AdminServer({ host: '127.0.0.1', port: 0 }, logs, store, () => undefined);
  await server.start();
  base = `http://${server.address}`;
});
afterAll(async () => {
  await server.stop();
});

const get = (path: string) => fetch(`${base}${path}`);
const post = (path: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { method: 'POST', headers });

function gwctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [GWCTL, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: '/nonexistent-home' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return once(child, 'exit').then(([code]) => ({ code: code as number, stdout, stderr }));
}

describe('/logging', () => {
  it('GET lists every component at info', async () => {
    const res = await get('/logging');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ levels: Object.fromEntries(COMPONENTS.map((c) => [c, 'info'])) });
  });

  it('POST ?component=&level= sets one component and the child logger follows at once', async () => {
    const res = await post('/logging?component=tollgate/syncer&level=debug');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { levels: Record<string, string> }).levels).toMatchObject({ 'tollgate/syncer': 'debug', 'tollgate/translator': 'info' });
    const before = lines.length;
    logs.get('tollgate/syncer').debug('syncer debug line');
    logs.get('tollgate/translator').debug('translator debug line');
    logs.flush();
    const written = lines.slice(before).map((l) => JSON.parse(l) as { component: string; msg: string });
    expect(written.map((l) => [l.component, l.msg])).toEqual([['tollgate/syncer', 'syncer debug line']]);
  });

  it('POST ?level= sets every component', async () => {
    const res = await post('/logging?level=warn');
    expect(((await res.json()) as { levels: Record<string, string> }).levels).toEqual(Object.fromEntries(COMPONENTS.map((c) => [c, 'warn'])));
    await post('/logging?level=info');
  });

  it.each([
    ['/logging', 'expected ?level=<level> (error, warn, info, debug, trace)'],
    ['/logging?level=loud', 'unknown level "loud"; levels: error, warn, info, debug, trace'],
    ['/logging?component=nope&level=info', 'unknown component "nope"; components: tollgate/syncer, tollgate/translator, gateway-controller, deployer, default'],
    ['/logging?level=info&x=1', 'unknown query parameter x; expected level, component'],
  ])('POST %s is a 400 that changes nothing', async (path, message) => {
    const res = await post(path);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe(`${message}\n`);
    expect(logs.levels()).toEqual(Object.fromEntries(COMPONENTS.map((c) => [c, 'info'])));
  });

  it('GET with a query is a 400; other methods 404/405', async () => {
    const res = await get('/logging?level=info');
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/GET \/logging takes no query parameters\n$/);
    expect((await fetch(`${base}/logging`, { method: 'DELETE' })).status).toBeGreaterThanOrEqual(404);
  });

  it('refuses a cross-site POST', async () => {
    expect((await post('/logging?level=debug', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post('/logging?level=debug', { origin: 'https://evil.example' })).status).toBe(403);
    expect(logs.levels().default).toBe('info');
  });
});

describe('gwctl controller log against the controller', () => {
  it('prints the levels, sets one component and all of them', async () => {
    const local = ['controller', 'log', '--local', '--admin-addr', server.address];
    const shown = await gwctl(local);
    expect(shown).toEqual({
      code: 0,
      stderr: '',
      stdout: [
        'current log level is info,tollgate/syncer=info,tollgate/translator=info,gateway-controller=info,deployer=info',
        '---',
        'tollgate/syncer: info',
        'tollgate/translator: info',
        'gateway-controller: info',
        'deployer: info',
        'default: info',
        '',
      ].join('\n'),
    });
    const set = await gwctl([...local, '--set', 'deployer=debug']);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('deployer: debug\n');
    expect(logs.levels().deployer).toBe('debug');
    const all = await gwctl([...local, '--level', 'info']);
    expect(all.stdout.split('\n')[0]).toBe('current log level is info,tollgate/syncer=info,tollgate/translator=info,gateway-controller=info,deployer=info');
    const bad = await gwctl([...local, '--set', 'deployer=loud']);
    expect(bad.code).not.toBe(0);
  });
});

describe('/snapshots', () => {
  it('lists each Gateway with version, origin and the IR, secrets redacted', async () => {
    const snapshot = {
      version: 'v1',
      source: { kind: 'controller', gateway: 'apps/gw' },
      binds: [{ port: 8080, address: '0.0.0.0', listeners: [{ name: 'http', protocol: 'HTTP', hostname: null, policy: null, routes: [{ name: 'r', filters: [{ type: 'RequestHeaderModifier', set: [{ name: 'authorization', value: new Secret('Bearer sk-live-123') }], add: [], remove: [] }] }] }] }],
    } as unknown as ProxySnapshot;
    store.offer(new Map([['apps/gw', snapshot]]));
    const res = await get('/snapshots');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain('sk-live-123');
    const body = JSON.parse(text) as { gateways: { gateway: string; version: string; origin: { namespace: string; name: string }; snapshot: { binds: { listeners: { routes: { filters: { set: { value: string }[] }[] }[] }[] }[] } }[] };
    expect(body.gateways).toHaveLength(1);
    expect(body.gateways[0]).toMatchObject({ gateway: 'apps/gw', version: 'v1', origin: { namespace: 'apps', name: 'gw' } });
    expect(body.gateways[0]!.snapshot.binds[0]!.listeners[0]!.routes[0]!.filters[0]!.set[0]!.value).toBe('[redacted]');
  });
});

describe('/debug/pprof', () => {
  it('heap is a gzipped profile; a bad seconds value is a 400', async () => {
    const heap = await get('/debug/pprof/heap');
    expect(heap.status).toBe(200);
    const bytes = new Uint8Array(await heap.arrayBuffer());
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);
    const bad = await get('/debug/pprof/profile?seconds=0');
    expect(bad.status).toBe(400);
  });
});

describe('/memory', () => {
  it('?gc=true answers the heap after a full collection', async () => {
    const r = await get('/memory?gc=true');
    expect(r.status).toBe(200);
    const m = (await r.json()) as { gc: { ms: number } | null; heap: { usedHeapSize: number }; process: { rss: number } };
    expect(m.gc?.ms).toBeGreaterThanOrEqual(0);
    expect(m.heap.usedHeapSize).toBeGreaterThan(0);
    expect(m.process.rss).toBeGreaterThan(0);
  });
});
