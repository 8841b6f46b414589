// The admin server scaffolding over real sockets: Host and browser guards, 405 with Allow,
// 404, both /logging contracts, /memory with a forced GC, and a CPU profile that stops when
// its client goes away.
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { send, until } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminServer, cpuProfileRunning, jsonLoggingRoutes, LogControl, memoryRoutes, pprofRoutes, textLoggingRoutes } from '../src/index.js';

const quiet = () => new Writable({ write: (_c, _e, cb) => cb() });
const MODULES = ['proxy', 'upstream'] as const;
const COMPONENTS = ['tollgate/syncer', 'tollgate/translator', 'gateway-controller', 'deployer', 'default'] as const;

let text: AdminServer;
let json: AdminServer;
let textLogs: LogControl<(typeof MODULES)[number]>;
let jsonLogs: LogControl<(typeof COMPONENTS)[number]>;
let base: string;
let jsonBase: string;

beforeAll(async () => {
  textLogs = new LogControl({ components: MODULES, destination: quiet() });
  text = new AdminServer({ host: '127.0.0.1', port: 0, title: 'test admin', allowedHosts: ['admin.internal', 'FD00::1'] });
  textLoggingRoutes(text.app, { logs: textLogs });
  pprofRoutes(text.app);
  memoryRoutes(text.app);
  text.app.post('/mutate', async () => 'mutated\n');
  base = `http://${await text.listen()}`;
  jsonLogs = new LogControl({ components: COMPONENTS, destination: quiet() });
  json = new AdminServer({ host: '127.0.0.1', port: 0, title: 'controller admin' });
  jsonLoggingRoutes(json.app, { logs: jsonLogs });
  jsonBase = `http://${await json.listen()}`;
});

afterAll(async () => {
  await text?.close();
  await json?.close();
});

describe('Host guard', () => {
  it('serves loopback names with any port, and the configured names', async () => {
    const port = new URL(base).port;
    for (const host of [`127.0.0.1:${port}`, '127.0.0.1', 'localhost:8080', 'LOCALHOST', '[::1]:15000', '[::1]', 'admin.internal:9', 'admin.internal', '[fd00::1]:15000']) {
      const r = await send(`${base}/logging`, { headers: { host } });
      expect([host, r.status]).toEqual([host, 200]);
    }
  });

  it('refuses any other name with a 421 that names the fix, and changes nothing', async () => {
    for (const host of ['evil.example', `attacker.example:${new URL(base).port}`, 'localhost.evil.example', '127.0.0.1.nip.io:15000']) {
      const r = await send(`${base}/logging?level=debug`, { method: 'POST', headers: { host } });
      expect(r.status).toBe(421);
      expect(r.headers['x-tollgate-error']).toBe('TG_ADMIN_HOST_REFUSED');
      expect(r.body).toContain(`Host "${host}"`);
      expect(r.body).toContain('config.adminAllowedHosts');
    }
    expect(textLogs.directive).toBe('info');
  });
});

describe('browser guard', () => {
  it('refuses a POST carrying Origin (even its own) or Sec-Fetch-Site other than none', async () => {
    const browsers: Record<string, string>[] = [{ origin: base }, { origin: 'http://evil.example' }, { origin: 'null' }, { 'sec-fetch-site': 'same-origin' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }];
    for (const headers of browsers) {
      const r = await send(`${base}/logging?level=debug`, { method: 'POST', headers });
      expect([headers, r.status]).toEqual([headers, 403]);
      expect(r.body).toContain('curl or gwctl');
    }
    expect(textLogs.directive).toBe('info');
    expect((await send(`${base}/mutate`, { method: 'POST', headers: { origin: base } })).status).toBe(403);
  });

  it('takes a POST from a client that sends neither header, or a typed-in one (Sec-Fetch-Site: none)', async () => {
    expect((await send(`${base}/mutate`, { method: 'POST' })).body).toBe('mutated\n');
    expect((await send(`${base}/mutate`, { method: 'POST', headers: { 'sec-fetch-site': 'none' } })).status).toBe(200);
  });

  it('refuses cross-site reads, serves same-origin and typed-in ones', async () => {
    expect((await send(`${base}/logging`, { headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403);
    expect((await send(`${base}/logging`, { headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(200);
    expect((await send(`${base}/logging`, { headers: { 'sec-fetch-site': 'none' } })).status).toBe(200);
  });
});

describe('methods and unknown paths', () => {
  it('a known path with the wrong method is a 405 with Allow', async () => {
    const put = await send(`${base}/logging`, { method: 'PUT' });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD, POST');
    const post = await send(`${base}/debug/pprof/heap`, { method: 'POST' });
    expect([post.status, post.headers.allow]).toEqual([405, 'GET, HEAD']);
    const get = await send(`${base}/mutate`);
    expect([get.status, get.headers.allow]).toEqual([405, 'POST']);
    expect(get.body).toBe('GET is not allowed on /mutate; use POST\n');
  });

  it('an unknown path is a 404 pointing at the index', async () => {
    const r = await send(`${base}/nope?x=1`);
    expect([r.status, r.body]).toEqual([404, 'no admin endpoint GET /nope; GET / lists them\n']);
  });
});

describe('index', () => {
  const rows = async (url: string) => [...(await send(`${url}/`)).body.matchAll(/<tr><td>(\w+)<\/td><td>(?:<a href="[^"]*">)?([^<]+)/g)].map((m) => `${m[1]} ${m[2]}`);

  it('lists the routes registered with an index line, in their order, once per method, and no other', async () => {
    expect(await rows(base)).toEqual(['GET /logging', 'GET /debug/pprof/profile', 'GET /debug/pprof/heap', 'GET /memory']);
    expect(await rows(jsonBase)).toEqual(['GET /logging', 'POST /logging']);
  });
});

describe('/logging, text contract', () => {
  it('a bare POST reads the level; POST ?level= sets it; GET with a query changes nothing', async () => {
    expect(await send(`${base}/logging`, { method: 'POST' })).toMatchObject({ status: 200, body: 'current log level is info\n' });
    expect((await send(`${base}/logging?level=debug`)).status).toBe(400);
    expect(textLogs.directive).toBe('info');
    expect((await send(`${base}/logging?level=warn,upstream=debug`, { method: 'POST' })).body).toBe('current log level is warn,upstream=debug\n');
    expect((await send(`${base}/logging?level=`, { method: 'POST' })).status).toBe(400);
    expect((await send(`${base}/logging?reset`, { method: 'POST' })).body).toBe('current log level is info\n');
  });
});

describe('/logging, controller JSON contract', () => {
  it('reads every component, sets all, sets one', async () => {
    expect(JSON.parse((await send(`${jsonBase}/logging`)).body)).toEqual({ levels: Object.fromEntries(COMPONENTS.map((c) => [c, 'info'])) });
    await send(`${jsonBase}/logging?level=warn`, { method: 'POST' });
    const r = await send(`${jsonBase}/logging?component=tollgate/syncer&level=debug`, { method: 'POST' });
    expect(JSON.parse(r.body)).toEqual({ levels: { 'tollgate/syncer': 'debug', 'tollgate/translator': 'warn', 'gateway-controller': 'warn', deployer: 'warn', default: 'warn' } });
    expect(jsonLogs.get('tollgate/syncer').level).toBe('debug');
  });

  it('answers the documented 400s and changes nothing', async () => {
    const before = (await send(`${jsonBase}/logging`)).body;
    const cases: [string, string, string][] = [
      ['POST', '/logging', 'expected ?level=<level> (error, warn, info, debug, trace)'],
      ['POST', '/logging?level=loud', 'unknown level "loud"; levels: error, warn, info, debug, trace'],
      ['POST', '/logging?component=nosuch&level=info', `unknown component "nosuch"; components: ${COMPONENTS.join(', ')}`],
      ['POST', '/logging?level=info&x=1', 'unknown query parameter x'],
      ['GET', '/logging?level=info', 'GET /logging takes no query parameters'],
    ];
    for (const [method, path, message] of cases) {
      const r = await send(`${jsonBase}${path}`, { method });
      expect([path, r.status]).toEqual([path, 400]);
      expect(r.body).toContain(message);
    }
    expect((await send(`${jsonBase}/logging`)).body).toBe(before);
    expect((await send(`${jsonBase}/logging`, { method: 'DELETE' })).status).toBe(405);
  });
});

describe('CPU profile', () => {
  it('stops when its client disconnects: the next profile is not refused', async () => {
    const req = httpRequest(`${base}/debug/pprof/profile?seconds=300`);
    req.on('error', () => undefined);
    req.end();
    await until(() => cpuProfileRunning(), { what: 'the first profile to run' });
    expect((await send(`${base}/debug/pprof/profile?seconds=1`)).status).toBe(409);
    req.destroy();
    const next = await until(
      async () => {
        const r = await send(`${base}/debug/pprof/profile?seconds=1`);
        return r.status === 409 ? null : r;
      },
      { what: 'a profile that is not refused with 409' },
    );
    expect(next.status).toBe(200);
  });
});

describe('/memory', () => {
  it('?gc=true collects garbage before reading: an object only weakly held is gone', async () => {
    // Allocated in a function so no stack slot keeps it; a WeakRef's target survives only to
    // the end of the current job, and the request below is a later one.
    const weak = (() => new WeakRef({ payload: new Array(1000).fill('x') }))();
    const r = await send(`${base}/memory?gc=true`);
    expect(r.status).toBe(200);
    const m = JSON.parse(r.body) as { gc: { ms: number } | null; heap: { usedHeapSize: number; spaces: { name: string }[] }; process: { rss: number } };
    expect(m.gc?.ms).toBeGreaterThanOrEqual(0);
    expect(weak.deref()).toBeUndefined();
    expect(m.heap.usedHeapSize).toBeGreaterThan(0);
    expect(m.heap.spaces.map((s) => s.name)).toContain('old_space');
  });

  it('reads without collecting by default, and refuses a gc value other than true or false', async () => {
    const plain = JSON.parse((await send(`${base}/memory`)).body) as { gc: unknown };
    expect(plain.gc).toBeNull();
    const r = await send(`${base}/memory?gc=yes`);
    expect(r.status).toBe(400);
    expect(r.headers['x-tollgate-error']).toBe('TG_MEMORY_GC');
    expect(r.body).toContain('gc must be true or false (got "yes")');
  });

  it('counts the bytes allocated since the start: a known allocation between two readings shows', async () => {
    const read = async () => (JSON.parse((await send(`${base}/memory`)).body) as { heap: { totalAllocatedBytes: number } }).heap.totalAllocatedBytes;
    const before = await read();
    // 64 arrays of 16,384 numbers: at least 8 MiB of heap, however the engine lays them out.
    const held = Array.from({ length: 64 }, () => new Array<number>(16_384).fill(1.5));
    const after = await read();
    expect(held).toHaveLength(64);
    expect(after - before).toBeGreaterThanOrEqual(8 * 1024 * 1024);
  });
});
