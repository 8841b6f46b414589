// Every command against a real standalone proxy (--local): config all (table, JSON, YAML, a
// saved dump), config backends (the §2.7 table), log (show, --level, --set, --reset, a refused
// module), and trace --raw in watch and inject mode, its events validated against the
// TraceEvent schema; inject mode never captures another client's request.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compile, TraceEvent, type TraceEvent as TraceEventT } from '@tollgate/api';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli.js';
import { TRACE_HEADER } from '../src/trace/inject.js';
import { drive, planTrace } from '../src/trace/run.js';
import { localTarget } from '../src/target/local.js';
import { CHAT_BODY, capture, gwctl, startProxy, type Proxy } from './helpers.js';

const validate = compile(TraceEvent);
let proxy: Proxy;
let local: string[];

beforeAll(async () => {
  proxy = await startProxy();
  local = ['--local', '--admin-addr', proxy.adminAddr];
});
afterAll(async () => {
  await proxy.close();
});

function lines(stdout: string): TraceEventT[] {
  const out = stdout.split('\n').filter((l) => l !== '');
  return out.map((l) => {
    const v: unknown = JSON.parse(l);
    const r = validate(v);
    if (!r.ok) throw new Error(`not a TraceEvent: ${l}\n${JSON.stringify(r.problems)}`);
    return r.value;
  });
}

const kinds = (events: TraceEventT[]) => events.map((e) => ('stage' in e.message ? `${e.message.type}:${e.message.stage}` : e.message.type));

describe('config', () => {
  it('config all prints listeners, routes, backends and policies', async () => {
    const r = await gwctl(['config', 'all', ...local]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Config [0-9a-f]+ from file .*config\.json, loaded \d{4}-/);
    expect(r.stdout).toMatch(/LISTENERS\nNAME\s+BIND\s+PROTOCOL\s+HOSTNAME\s+ROUTES\nmain\s+0\.0\.0\.0:\d+\s+HTTP\s+\*\s+2\n/);
    expect(r.stdout).toMatch(/main\/chat\s+api\.example\.com\s+\/v1\*\s+-\s+127\.0\.0\.1:\d+/);
    expect(r.stdout).toMatch(/main\/models\s+\*\s+GET \/v1\/models\s+-\s+127\.0\.0\.1:\d+/);
    expect(r.stdout).toMatch(/BACKENDS\nTYPE\s+NAME\s+NAMESPACE\s+ENDPOINTS\nBackend\s+127\.0\.0\.1:\d+\s+-\s+1\n/);
    expect(r.stdout).toContain('listener/main       gateway   localRateLimit: 1000 requests/Minutes');
    expect(r.stdout).toContain('route/main/chat     route     localRateLimit: 500 requests/Minutes (+5 burst), 100000 tokens/Hours, 1000000 tokens/Days per Header x-team');
    expect(r.stdout).toContain('route/main/models   route     authorization: 1 rule; transformation: request 2 headers; response 1 header\n');
  });

  it('config all -o json prints the /config_dump and -o yaml the same as YAML', async () => {
    const json = await gwctl(['config', 'all', ...local, '-o', 'json']);
    expect(json.code).toBe(0);
    const dump = JSON.parse(json.stdout) as { routes: { name: string }[]; version: string };
    expect(dump.routes.map((r) => r.name)).toEqual(['main/chat', 'main/models']);
    const yaml = await gwctl(['proxy', 'config', 'all', ...local, '-o', 'yaml']);
    expect(yaml.code).toBe(0);
    expect((parseYaml(yaml.stdout) as { version: string }).version).toBe(dump.version);
  });

  it('config all --file renders a saved dump offline, the same as the live one', async () => {
    const live = await gwctl(['config', 'all', ...local]);
    const dump = await gwctl(['config', 'all', ...local, '-o', 'json']);
    const dir = await mkdtemp(join(tmpdir(), 'gwctl-dump-'));
    const file = join(dir, 'dump.json');
    await writeFile(file, dump.stdout);
    const offline = await gwctl(['config', 'all', '--file', file]);
    expect(offline.code).toBe(0);
    expect(offline.stdout).toBe(live.stdout);
  });

  it('config backends prints TYPE NAME NAMESPACE ENDPOINT HEALTH REQUESTS LATENCY with the request counts', async () => {
    const before = await gwctl(['config', 'backends', ...local]);
    const count = Number(/Backend\s+\S+\s+-\s+\S+\s+\S+\s+(\d+)/.exec(before.stdout)?.[1]);
    for (let i = 0; i < 3; i++) expect((await proxy.send('/v1/chat/completions', { method: 'POST', headers: { host: 'api.example.com', 'content-type': 'application/json' }, body: CHAT_BODY })).status).toBe(200);
    const r = await gwctl(['config', 'backends', ...local]);
    expect(r.code).toBe(0);
    const [header, row, ...rest] = r.stdout.trimEnd().split('\n');
    expect(rest).toEqual([]);
    expect(header).toMatch(/^TYPE\s+NAME\s+NAMESPACE\s+ENDPOINT\s+HEALTH\s+REQUESTS\s+LATENCY$/);
    const m = /^Backend\s+127\.0\.0\.1:(\d+)\s+-\s+127\.0\.0\.1:(\d+)\s+(\d\.\d\d)\s+(\d+)\s+(\d+\.\d\d)ms$/.exec(row!);
    expect(m, row).not.toBeNull();
    expect(Number(m![1])).toBe(proxy.mock.port);
    expect(m![3]).toBe('1.00');
    expect(Number(m![4])).toBe(count + 3);
    const json = await gwctl(['config', 'backends', ...local, '-o', 'json']);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        type: 'Backend',
        name: `127.0.0.1:${proxy.mock.port}`,
        namespace: '',
        coolDown: null,
        endpoints: [expect.objectContaining({ address: `127.0.0.1:${proxy.mock.port}`, requests: count + 3, inFlight: 0, ejectedUntil: null })],
      },
    ]);
    const wide = await gwctl(['config', 'backends', ...local, '-o', 'wide']);
    const [wideHeader, wideRow] = wide.stdout.trimEnd().split('\n');
    expect(wideHeader).toMatch(/^TYPE\s+NAME\s+NAMESPACE\s+ENDPOINT\s+HEALTH\s+REQUESTS\s+LATENCY\s+INFLIGHT\s+EJECTED$/);
    expect(wideRow).toMatch(/^Backend\s+127\.0\.0\.1:\d+\s+-\s+127\.0\.0\.1:\d+\s+1\.00\s+\d+\s+\d+\.\d\dms\s+0\s+-$/);
  });

  it('config backends --file renders the health of a saved cluster dump', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gwctl-dump-'));
    const file = join(dir, 'dump.json');
    const dump = {
      routes: [],
      policies: [],
      backends: [
        {
          type: 'Service',
          name: 'llm.ai.svc.cluster.local:8000',
          namespace: 'ai',
          endpoints: [
            { address: '10.0.0.7:8000', health: 0.8765, requests: 120, latencyMs: 41.2049, inFlight: 3, ejectedUntil: null },
            { address: '10.0.0.8:8000', health: 1, requests: 0, latencyMs: 0 },
            { address: '10.0.0.9:8000', health: 0.9, requests: 2, latencyMs: 0, inFlight: 0, ejectedUntil: '2026-11-23T14:00:02.000Z' },
          ],
        },
      ],
    };
    await writeFile(file, JSON.stringify(dump));
    const r = await gwctl(['config', 'backends', '--file', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'TYPE      NAME                            NAMESPACE   ENDPOINT        HEALTH   REQUESTS   LATENCY',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.7:8000   0.88     120        41.20ms',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.8:8000   1.00     0          0.00ms',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.9:8000   0.90     2          0.00ms',
        '',
      ].join('\n'),
    );
    // -o wide: requests in flight and the ejection; a dump from a proxy that does not report them shows `?`.
    const wide = await gwctl(['config', 'backends', '--file', file, '-o', 'wide']);
    expect(wide.stdout).toBe(
      [
        'TYPE      NAME                            NAMESPACE   ENDPOINT        HEALTH   REQUESTS   LATENCY   INFLIGHT   EJECTED',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.7:8000   0.88     120        41.20ms   3          -',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.8:8000   1.00     0          0.00ms    ?          ?',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.9:8000   0.90     2          0.00ms    0          2026-11-23T14:00:02.000Z',
        '',
      ].join('\n'),
    );
  });

  it('config backends shows the backends cooling down after a 429 or 503, with the time left and why, after the health table', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gwctl-dump-'));
    const file = join(dir, 'dump.json');
    const endpoint = (address: string) => ({ address, health: 1, requests: 4, latencyMs: 2 });
    const dump = {
      routes: [],
      policies: [],
      backends: [
        { type: 'Backend', name: 'ai/openai', namespace: 'ai', coolDown: { until: '2026-11-23T14:00:30.000Z', remainingSeconds: 27, reason: '429 with Retry-After: 30' }, endpoints: [endpoint('api.openai.com:443')] },
        { type: 'Backend', name: 'ai/anthropic', namespace: 'ai', coolDown: null, endpoints: [endpoint('api.anthropic.com:443')] },
        { type: 'Service', name: 'llm.ai.svc.cluster.local:8000', namespace: 'ai', coolDown: { until: '2026-11-23T14:00:05.000Z', remainingSeconds: 2, reason: '503 without Retry-After' }, endpoints: [endpoint('10.0.0.7:8000')] },
      ],
    };
    await writeFile(file, JSON.stringify(dump));
    const r = await gwctl(['config', 'backends', '--file', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        'TYPE      NAME                            NAMESPACE   ENDPOINT                HEALTH   REQUESTS   LATENCY',
        'Backend   ai/openai                       ai          api.openai.com:443      1.00     4          2.00ms',
        'Backend   ai/anthropic                    ai          api.anthropic.com:443   1.00     4          2.00ms',
        'Service   llm.ai.svc.cluster.local:8000   ai          10.0.0.7:8000           1.00     4          2.00ms',
        '',
        'COOLING DOWN',
        'TYPE      NAME                            NAMESPACE   REMAINING   REASON',
        'Backend   ai/openai                       ai          27s         429 with Retry-After: 30',
        'Service   llm.ai.svc.cluster.local:8000   ai          2s          503 without Retry-After',
        '',
      ].join('\n'),
    );
    const json = JSON.parse((await gwctl(['config', 'backends', '--file', file, '-o', 'json'])).stdout) as { name: string; coolDown: unknown }[];
    expect(json.map((b) => [b.name, b.coolDown])).toEqual(dump.backends.map((b) => [b.name, b.coolDown]));
    // A cool-down that is not what a proxy sends is refused, naming the field.
    await writeFile(file, JSON.stringify({ ...dump, backends: [{ ...dump.backends[0], coolDown: { until: 'x', remainingSeconds: 'soon', reason: 'r' } }] }));
    const bad = await gwctl(['config', 'backends', '--file', file]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('backends[0].coolDown.remainingSeconds must be a number');
  });
});

describe('log', () => {
  it('shows the directive, sets the global level, one module, and resets', async () => {
    expect(await gwctl(['log', ...local])).toEqual({ code: 0, stdout: 'current log level is info\n', stderr: '' });
    expect((await gwctl(['log', ...local, '--level', 'debug'])).stdout).toBe('current log level is debug\n');
    expect((await gwctl(['proxy', 'log', ...local, '--set', 'upstream=trace'])).stdout).toBe('current log level is debug,upstream=trace\n');
    expect((await gwctl(['log', ...local, '--level', 'WARN', '--set', 'routing=error'])).stdout).toBe('current log level is warn,routing=error,upstream=trace\n');
    expect(proxy.gateway.logs.directive).toBe('warn,routing=error,upstream=trace');
    expect((await gwctl(['log', ...local, '--reset'])).stdout).toBe('current log level is info\n');
  });

  it('a module the proxy does not know is the proxy\'s 400, exit 8; a bad level is a usage error, exit 2', async () => {
    const r = await gwctl(['log', ...local, '--set', 'nosuch=debug']);
    expect(r.code).toBe(8);
    expect(r.stderr).toBe('gwctl: POST /logging answered 400: invalid log directive: unknown module "nosuch"; expected one of proxy, config, routing, upstream, admin, ratelimit, auth, trace\n');
    const bad = await gwctl(['log', ...local, '--level', 'loud']);
    expect(bad).toEqual({ code: 2, stdout: '', stderr: "gwctl: --level must be one of error, warn, info, debug, trace, got 'loud'\n" });
    expect(proxy.gateway.logs.directive).toBe('info');
  });
});

describe('trace --raw', () => {
  it('inject mode sends the request with the URL host as Host, curl headers and body, and prints one valid event per line', async () => {
    const c = capture();
    const code = await main(
      ['trace', ...local, '--raw', '--port', String(proxy.port), '--', 'http://api.example.com/v1/chat/completions?x=1', '-H', 'X-Team: blue', '--json', CHAT_BODY, '-i'],
      c.io,
    );
    expect(c.stderr.text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(c.stderr.text).toContain('"total_tokens"');
    expect(code).toBe(0);
    const events = lines(c.stdout.text);
    expect(kinds(events)).toEqual([
      'requestStarted',
      'requestSnapshot:initial request',
      'requestSnapshot:gateway policies',
      'routeSelection',
      'policySelection',
      'requestSnapshot:route policies',
      'requestSnapshot:final request',
      'backendCallStart',
      'backendCallResult',
      'responseSnapshot:backend response ready',
      'responseSnapshot:final response',
      'requestFinished',
    ]);
    const initial = events[1]!.message;
    if (initial.type !== 'requestSnapshot') throw new Error('unreachable');
    const req = initial.requestState.request;
    expect(req).toMatchObject({ method: 'POST', host: 'api.example.com', pathAndQuery: '/v1/chat/completions?x=1' });
    expect(req.headers).toMatchObject({ 'x-team': 'blue', 'content-type': 'application/json', accept: 'application/json' });
    expect(req.headers[TRACE_HEADER]).toMatch(/^[0-9a-f-]{36}$/);
    expect(events[3]!.message).toEqual({ type: 'routeSelection', selectedRoute: 'main/chat', evaluatedRoutes: ['main/chat'] });
    expect(events[8]!.message).toEqual({ type: 'backendCallResult', status: 200, error: null });
  });

  it('watch mode traces the next request from any client', async () => {
    const c = capture({ tty: true });
    const run = main(['proxy', 'trace', ...local, '--raw'], c.io);
    await c.stderr.waitFor(/waiting for the next request/);
    const res = await proxy.send('/v1/models', { headers: { 'x-client': 'someone-else' } });
    expect(res.status).toBe(200);
    expect(await run).toBe(0);
    const events = lines(c.stdout.text);
    expect(events[0]!.message.type).toBe('requestStarted');
    expect(events.at(-1)!.message.type).toBe('requestFinished');
    const initial = events[1]!.message;
    expect(initial.type === 'requestSnapshot' && initial.requestState.request.headers['x-client']).toBe('someone-else');
  });

  it('a 404 is traced without backend events, the response printed only on stderr', async () => {
    const c = capture();
    const code = await main(['trace', ...local, '--raw', '--port', String(proxy.port), '--', 'http://other.example.com/nothing-here'], c.io);
    expect(code).toBe(0);
    const events = lines(c.stdout.text);
    expect(events.find((e) => e.message.type === 'routeSelection')?.message).toMatchObject({ selectedRoute: null });
    expect(events.some((e) => e.message.type === 'backendCallStart')).toBe(false);
    const final = events.find((e) => e.message.type === 'responseSnapshot');
    expect(final?.severity).toBe('warn');
  });

  it('inject mode never captures another client\'s request, even one arriving after the session is armed', async () => {
    const target = localTarget(proxy.adminAddr);
    const plan = await planTrace({ port: proxy.port }, ['http://api.example.com/v1/chat/completions', '-H', 'x-who: gwctl', '--json', CHAT_BODY]);
    const events: TraceEventT[] = [];
    let foreign = 0;
    await drive(target, plan, {
      onEvent: (e) => events.push(e),
      // Armed: another client's request goes through before gwctl sends its own.
      onArmed: async () => {
        foreign = (await proxy.send('/v1/chat/completions', { method: 'POST', headers: { host: 'api.example.com', 'x-who': 'intruder', 'content-type': 'application/json' }, body: CHAT_BODY })).status;
      },
      signal: new AbortController().signal,
    });
    expect(foreign).toBe(200);
    const snapshots = events.filter((e) => e.message.type === 'requestSnapshot');
    expect(snapshots.length).toBe(4);
    for (const s of snapshots) expect(s.message.type === 'requestSnapshot' && s.message.requestState.request.headers['x-who']).toBe('gwctl');
  });
});
