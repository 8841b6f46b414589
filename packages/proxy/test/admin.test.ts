// The admin server: config dump (redacted), logging directives, memory, pprof profiles,
// the task tree, graceful shutdown and the cross-site guard, over real sockets.
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;
let release: (() => void) | undefined;
let arrived: () => void = () => undefined;

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (req.url?.startsWith('/hold')) {
      release = () => res.end('released');
      arrived();
      return;
    }
    res.end('ok');
  });
  gw = await startGateway(
    (port) => simpleConfig(port, [
      {
        name: 'api',
        filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'Authorization', value: 'Bearer sk-live-123' }, { name: 'x-plain', value: 'visible' }] } }],
        backends: [{ host: up.host }],
      },
    ]),
  );
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

const get = (path: string) => send(`${gw.adminUrl}${path}`);
const post = (path: string, headers: Record<string, string> = {}) => send(`${gw.adminUrl}${path}`, { method: 'POST', headers });

describe('GET /config_dump', () => {
  it('has the top-level collections, version and source, with secrets redacted', async () => {
    const r = await get('/config_dump');
    expect(r.status).toBe(200);
    const dump = JSON.parse(r.body) as Record<string, unknown>;
    expect(Object.keys(dump)).toEqual(expect.arrayContaining(['version', 'source', 'binds', 'listeners', 'routes', 'backends', 'workloads', 'services', 'policies']));
    expect(dump.version).toBe(gw.gateway.snapshot.version);
    expect(dump.source).toEqual({ kind: 'file', path: gw.file });
    expect(r.body).not.toContain('sk-live-123');
    expect(r.body).toContain('[redacted]');
    expect(r.body).toContain('visible');
  });
});

describe('/logging', () => {
  it('reads, sets a global level, sets a module, keeps modules on a bare level, resets', async () => {
    expect((await get('/logging')).body).toBe('current log level is info\n');
    expect((await post('/logging?level=debug,upstream=trace')).body).toBe('current log level is debug,upstream=trace\n');
    expect(gw.gateway.logs.get('upstream').level).toBe('trace');
    expect(gw.gateway.logs.get('proxy').level).toBe('debug');
    expect((await post('/logging?level=warn')).body).toBe('current log level is warn,upstream=trace\n');
    expect(gw.gateway.logs.get('proxy').level).toBe('warn');
    expect((await post('/logging?reset')).body).toBe('current log level is info\n');
    expect(gw.gateway.logs.get('upstream').level).toBe('info');
  });

  it('refuses a bad directive with a 400 naming the bad part, changing nothing', async () => {
    const bad = await post('/logging?level=info,nosuch=debug');
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('unknown module "nosuch"');
    expect((await post('/logging?level=loud')).body).toContain('"loud" is not a level');
    expect((await get('/logging')).body).toBe('current log level is info\n');
  });

  it('a bare POST reads the level (200); GET never changes it', async () => {
    expect(await post('/logging')).toMatchObject({ status: 200, body: 'current log level is info\n' });
    expect((await get('/logging?level=debug')).status).toBe(400);
    expect((await get('/logging')).body).toBe('current log level is info\n');
  });
});

describe('GET /memory', () => {
  it('reports process and V8 heap figures', async () => {
    const m = JSON.parse((await get('/memory')).body) as { process: { rss: number }; heap: { spaces: { name: string }[] }; cgroup: unknown };
    expect(m.process.rss).toBeGreaterThan(0);
    expect(m.heap.spaces.map((s) => s.name)).toContain('old_space');
    expect(m).toHaveProperty('cgroup');
  });
});

describe('pprof', () => {
  it('serves a gzipped pprof CPU profile', async () => {
    const r = await fetch(`${gw.adminUrl}/debug/pprof/profile?seconds=1`);
    expect(r.status).toBe(200);
    const body = Buffer.from(await r.arrayBuffer());
    expect([body[0], body[1]]).toEqual([0x1f, 0x8b]);
    const profile = Profile.decode(gunzipSync(body));
    expect(profile.sampleType.length).toBeGreaterThan(0);
    expect(profile.stringTable.strings.length).toBeGreaterThan(0);
  });

  it('serves a gzipped pprof heap profile', async () => {
    const r = await fetch(`${gw.adminUrl}/debug/pprof/heap`);
    const profile = Profile.decode(gunzipSync(Buffer.from(await r.arrayBuffer())));
    expect(profile.sampleType.length).toBeGreaterThan(0);
  });

  it('refuses seconds outside 1..300', async () => {
    for (const s of ['0', '301', 'abc', '1.5']) {
      const r = await get(`/debug/pprof/profile?seconds=${s}`);
      expect(r.status).toBe(400);
      expect(r.body).toContain('seconds must be an integer from 1 to 300');
    }
  });
});

describe('GET /debug/tasks', () => {
  it('shows listeners, a request in flight with its upstream call, and background tasks', async () => {
    const got = new Promise<void>((r) => (arrived = r));
    const inflight = send(`${gw.url}/hold`);
    await got;
    const tree = JSON.parse((await get('/debug/tasks')).body) as {
      listeners: { port: number }[];
      requests: { url: string; stage: string; route: string; children: { target: string }[] }[];
      background: { name: string }[];
    };
    expect(tree.listeners.map((l) => l.port)).toEqual([gw.port]);
    expect(tree.requests).toEqual([expect.objectContaining({ url: '/hold', stage: 'upstream', route: 'main/api', children: [expect.objectContaining({ target: up.host })] })]);
    expect(tree.background.map((b) => b.name)).toEqual(['config watcher']);
    release!();
    expect((await inflight).body).toBe('released');
  });
});

describe('index, unknown paths and the cross-site guard', () => {
  it('GET / lists the endpoints', async () => {
    const r = await get('/');
    expect(r.headers['content-type']).toContain('text/html');
    for (const p of ['/config_dump', '/backends', '/debug/trace', '/logging', '/memory', '/debug/pprof/profile', '/debug/pprof/heap', '/debug/tasks', '/quitquitquit']) expect(r.body).toContain(p);
  });
  it('an unknown endpoint is a 404 pointing at the index', async () => {
    expect((await get('/nope')).body).toContain('GET / lists them');
  });
  it('refuses cross-site mutations', async () => {
    expect((await post('/logging?level=debug', { origin: 'http://evil.example' })).status).toBe(403);
    expect((await post('/logging?level=debug', { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await get('/logging')).body).toBe('current log level is info\n');
  });
  it('GET /quitquitquit is a 405 and does not stop anything', async () => {
    const r = await get('/quitquitquit');
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('POST');
    expect((await send(`${gw.url}/x`)).status).toBe(200);
  });
});

describe('POST /quitquitquit', () => {
  it('shuts the gateway down gracefully', async () => {
    const other = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]));
    const stopped = new Promise<string>((resolve) => {
      other.gateway.onShutdownRequest = (reason) => {
        resolve(reason);
        void other.gateway.close();
      };
    });
    const r = await send(`${other.adminUrl}/quitquitquit`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(await stopped).toBe('POST /quitquitquit');
    await other.close();
    await expect(send(`${other.url}/`)).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('backend health in /config_dump', () => {
  it('counts requests per endpoint with a health score, a latency average, requests in flight and an ejection', async () => {
    const dead = `127.0.0.1:${await freePort()}`;
    // Time stands still: the failure average does not fade and the ejection does not end.
    const now = Date.parse('2026-01-01T00:00:00Z');
    const g = await startGateway(
      (port) => simpleConfig(port, [
        { name: 'live', matches: [{ path: { value: '/live' } }], backends: [{ host: up.host }] },
        { name: 'dead', matches: [{ path: { value: '/dead' } }], backends: [{ host: dead }] },
      ]),
      { clock: () => now },
    );
    try {
      for (let i = 0; i < 3; i++) await send(`${g.url}/live`);
      for (let i = 0; i < 2; i++) await send(`${g.url}/dead`);
      const dump = (await (await fetch(`${g.adminUrl}/config_dump`)).json()) as { backends: { type: string; name: string; endpoints: { address: string; health: number; requests: number; latencyMs: number; inFlight: number; ejectedUntil: string | null }[] }[] };
      const live = dump.backends.find((b) => b.name === up.host)!;
      const down = dump.backends.find((b) => b.name === dead)!;
      expect(live.type).toBe('Backend');
      expect(live.endpoints).toEqual([expect.objectContaining({ address: up.host, requests: 3, health: 1, inFlight: 0, ejectedUntil: null })]);
      expect(live.endpoints[0]!.latencyMs).toBeGreaterThan(0);
      // Its only endpoint is still tried while ejected; the ejection (1 s) counts from the first failure.
      expect(down.endpoints).toEqual([expect.objectContaining({ address: dead, requests: 2, inFlight: 0, ejectedUntil: '2026-01-01T00:00:01.000Z' })]);
      expect(down.endpoints[0]!.health).toBeCloseTo(0.81, 5);
    } finally {
      await g.close();
    }
  });
});

describe('wrong methods', () => {
  it('every GET endpoint answers another method with 405 and Allow', async () => {
    for (const path of ['/', '/config_dump', '/backends', '/debug/trace', '/memory', '/debug/pprof/profile', '/debug/pprof/heap', '/debug/tasks']) {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const r = await send(`${gw.adminUrl}${path}`, { method });
        expect([method, path, r.status, r.headers.allow]).toEqual([method, path, 405, 'GET, HEAD']);
      }
    }
    expect((await send(`${gw.adminUrl}/logging`, { method: 'DELETE' })).headers.allow).toBe('GET, HEAD, POST');
  });
});

describe('Host names (config.adminAllowedHosts)', () => {
  it('answers loopback names and the configured ones, refuses others with 421', async () => {
    const g = await startGateway((port) => ({ config: { adminAllowedHosts: ['tollgate-admin.internal'] }, ...simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]) }));
    try {
      const at = (host: string) => send(`${g.adminUrl}/logging`, { headers: { host } });
      expect((await at('localhost:31337')).status).toBe(200);
      expect((await at('[::1]:15000')).status).toBe(200);
      expect((await at('tollgate-admin.internal:15000')).status).toBe(200);
      const refused = await at('rebound.example:15000');
      expect(refused.status).toBe(421);
      expect(refused.body).toContain('config.adminAllowedHosts');
    } finally {
      await g.close();
    }
  });

  it('refuses a bad adminAllowedHosts entry at load, naming the field', async () => {
    await expect(startGateway((port) => ({ config: { adminAllowedHosts: ['bad host:80'] }, ...simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]) }))).rejects.toThrow(/config\.adminAllowedHosts\[0\]/);
  });
});

describe('credentials in request targets and route matches', () => {
  it('/debug/tasks shows an in-flight request with its credential query values redacted', async () => {
    const got = new Promise<void>((r) => (arrived = r));
    const inflight = send(`${gw.url}/hold?api_key=sk-live-999&model=gpt&X-Amz-Signature=abc`);
    await got;
    const body = (await get('/debug/tasks')).body;
    expect(body).not.toContain('sk-live-999');
    expect(body).not.toContain('abc');
    expect((JSON.parse(body) as { requests: { url: string }[] }).requests[0]!.url).toBe('/hold?api_key=[redacted]&model=gpt&X-Amz-Signature=[redacted]');
    release!();
    await inflight;
  });

  it('/config_dump redacts the values routes match on when they are credentials', async () => {
    const g = await startGateway(
      (port) => simpleConfig(port, [
        {
          name: 'keyed',
          matches: [{ path: { value: '/k' }, headers: [{ name: 'x-api-key', value: 'key-in-match' }, { name: 'x-team', value: 'blue' }], queryParams: [{ name: 'token', value: 'tok-in-match' }, { name: 'v', value: '2' }] }],
          backends: [{ host: up.host }],
        },
      ]),
    );
    try {
      const r = await send(`${g.adminUrl}/config_dump`);
      expect(r.body).not.toContain('key-in-match');
      expect(r.body).not.toContain('tok-in-match');
      const match = (JSON.parse(r.body) as { routes: { matches: { headers: { name: string; value: string }[]; queryParams: { name: string; value: string }[] }[] }[] }).routes[0]!.matches[0]!;
      expect(match.headers.map((h) => h.value)).toEqual(['[redacted]', 'blue']);
      expect(match.queryParams.map((q) => q.value)).toEqual(['[redacted]', '2']);
      expect((await send(`${g.url}/k?token=tok-in-match&v=2`, { headers: { 'x-api-key': 'key-in-match', 'x-team': 'blue' } })).status).toBe(200);
    } finally {
      await g.close();
    }
  });
});
