// What the admin server answers is validated and waited for only so long: real servers that
// answer garbage (an event with `message: null`, a /config_dump with nulls, a /logging that is
// not one) or stall (no headers, a body that stops, a trace stream without keepalives) give
// one `gwctl: ...` line and exit 8 or 11, never a crash or a hang. A trace waiting for its
// request is kept open by the proxy's keepalives.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GwctlError } from '../src/errors.js';
import { localTarget } from '../src/target/local.js';
import { drive, planTrace } from '../src/trace/run.js';
import { gwctl, gwctlBin, requireBuild, startProxy } from './helpers.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** An admin-server stand-in on an ephemeral port. */
async function admin(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function expectOneLine(r: { stderr: string; stdout: string }, re: RegExp) {
  expect(r.stdout).toBe('');
  expect(r.stderr.split('\n').length, r.stderr).toBe(2);
  expect(r.stderr).toMatch(re);
}

const ARMED = ': trace session 1 armed; waiting for the next request\n\n';

describe('malformed answers: exit 8', () => {
  beforeAll(() => requireBuild());

  it('a trace event with message: null (the binary: no crash, no stack)', async () => {
    const addr = await admin((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${ARMED}data: {"eventStart":null,"eventEnd":3,"severity":"info","message":null}\n\n`);
    });
    const r = await gwctlBin(['trace', '--local', '--admin-addr', addr, '--raw']);
    expect(r.code).toBe(8);
    expectOneLine(r, /^gwctl: the trace stream sent an invalid event: message: got null; expected object$/m);
  });

  it('a trace event of the wrong shape, and one that is not JSON', async () => {
    for (const data of ['{"message":{"type":"requestFinished"}}', '[1,2]', 'null', '{"message":']) {
      const addr = await admin((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`${ARMED}data: ${data}\n\n`);
      });
      const r = await gwctl(['trace', '--local', '--admin-addr', addr, '--raw']);
      expect(r.code, data).toBe(8);
      expectOneLine(r, /^gwctl: the trace stream sent an (invalid event|event that is not JSON): /);
    }
  });

  it('a /config_dump with nulls where objects belong, or not JSON', async () => {
    const answers: Record<string, string> = {
      '{"routes":[{"name":"a","matches":[null]}],"backends":[],"policies":[]}': 'routes\\[0\\]\\.matches\\[0\\] must be an object',
      '{"routes":[],"backends":[],"policies":[],"listeners":[null]}': 'listeners\\[0\\] must be an object',
      '{"routes":[{"name":"a","filters":[{"type":null}]}],"backends":[],"policies":[]}': 'routes\\[0\\]\\.filters\\[0\\]\\.type must be a string',
      '{"routes":[],"backends":[],"policies":[{"target":{"kind":null,"name":"x"},"level":"route","policy":{}}]}': 'policies\\[0\\]\\.target\\.kind must be a string',
      'null': 'expected a JSON object',
    };
    for (const [body, problem] of Object.entries(answers)) {
      const addr = await admin((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
      const r = await gwctl(['config', 'all', '--local', '--admin-addr', addr]);
      expect(r.code, body).toBe(8);
      expectOneLine(r, new RegExp(`^gwctl: the /config_dump answer of ${addr} is not a /config_dump body: ${problem}$`, 'm'));
    }
    const html = await admin((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>'));
    const r = await gwctl(['config', 'all', '--local', '--admin-addr', html]);
    expect(r.code).toBe(8);
    expectOneLine(r, /^gwctl: GET \/config_dump did not answer JSON: <html>login<\/html>$/m);
  });

  it('a /backends answer of the wrong shape', async () => {
    const answers: Record<string, string> = {
      '{"backends":[{"name":"x","endpoints":[{"address":"a","health":1,"requests":1,"latencyMs":1,"inFlight":"2"}]}]}': 'backends\\[0\\]\\.endpoints\\[0\\]\\.inFlight must be a number',
      '{"backends":[{"name":"x","endpoints":[{"address":"a","health":1,"requests":1,"latencyMs":1,"ejectedUntil":5}]}]}': 'backends\\[0\\]\\.endpoints\\[0\\]\\.ejectedUntil must be a string',
      '{"backends":null}': '"backends" must be an array',
      '{"backends":[],"missingWorkers":[{"worker":"1"}]}': 'missingWorkers\\[0\\] is not \\{worker, reason\\}',
      'null': 'expected a JSON object',
    };
    for (const [body, problem] of Object.entries(answers)) {
      const addr = await admin((req, res) => res.writeHead(req.url === '/backends' ? 200 : 404, { 'content-type': 'application/json' }).end(body));
      const r = await gwctl(['config', 'backends', '--local', '--admin-addr', addr]);
      expect(r.code, body).toBe(8);
      expectOneLine(r, new RegExp(`^gwctl: the /backends answer of ${addr} is not a /backends body: ${problem}$`, 'm'));
    }
  });

  it('a /budgets answer of the wrong shape', async () => {
    const row = { source: 'local', level: 'route', scope: 'main/chat', entry: 'rateLimit.local[0]', by: 'consumer', key: 'alice', overflow: false, kind: 'requests', limit: 5, used: 1, reserved: 0, remaining: 4, window: 'Hours', resetSeconds: 3, resetAt: 'x', answeredAt: null };
    const answers: Record<string, string> = {
      [JSON.stringify({ version: 'v', total: 1, budgets: [{ ...row, used: '1' }] })]: 'budgets\\[0\\]\\.used is not a number at or above 0',
      [JSON.stringify({ version: 'v', total: 1, budgets: [{ ...row, source: 'redis' }] })]: 'budgets\\[0\\]\\.source is neither "local" nor "global \\(last answer\\)"',
      [JSON.stringify({ version: 'v', total: 1, budgets: [{ ...row, key: 7 }] })]: 'budgets\\[0\\]\\.key is not a string or null',
      [JSON.stringify({ version: 'v', total: 1001, budgets: new Array(1001).fill(row) })]: '1001 rows, more than 1000',
      '{"budgets":null}': 'it has no budgets list',
      [JSON.stringify({ version: 'v', total: 0, budgets: [], missingWorkers: {} })]: 'missingWorkers is not a list of at most 64',
      'null': 'not a JSON object',
    };
    for (const [body, problem] of Object.entries(answers)) {
      const addr = await admin((req, res) => res.writeHead(req.url === '/budgets' ? 200 : 404, { 'content-type': 'application/json' }).end(body));
      const r = await gwctl(['budgets', '--local', '--admin-addr', addr]);
      expect(r.code, body.slice(0, 80)).toBe(8);
      expectOneLine(r, new RegExp(`^gwctl: GET /budgets of ${addr} is not a budgets answer: ${problem}$`, 'm'));
    }
  });

  it("a worker thread's part missing from a proxy on several threads is a warning naming it; the rest is shown", async () => {
    const missingWorkers = [{ worker: 1, reason: 'worker 1 did not answer view within 2s' }];
    const backend = { type: 'Backend', name: '127.0.0.1:9000', namespace: '', coolDown: null, endpoints: [{ address: '127.0.0.1:9000', health: 1, requests: 3, latencyMs: 2, inFlight: 0, ejectedUntil: null }] };
    const row = { source: 'global (last answer)', level: null, scope: 'main/chat', entry: 'rateLimit.global.descriptors[0]', by: 'consumer', key: 'dave', overflow: false, kind: 'requests', limit: 10, used: 4, reserved: 0, remaining: 6, window: '86400s', resetSeconds: 60, resetAt: '2026-11-28T00:00:00.000Z', answeredAt: '2026-11-27T23:59:00.000Z' };
    const bodies: Record<string, unknown> = { '/backends': { version: 'v1', backends: [backend], missingWorkers }, '/budgets': { version: 'v1', total: 1, shown: 1, budgets: [row], missingWorkers } };
    const addr = await admin((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(bodies[req.url!])));
    const backends = await gwctl(['config', 'backends', '--local', '--admin-addr', addr, '-o', 'json']);
    expect(backends.code).toBe(0);
    expect(backends.stderr).toBe(`gwctl: warning: ${addr}: worker thread 1 did not answer (worker 1 did not answer view within 2s); the endpoint counts of that thread are not included\n`);
    expect((JSON.parse(backends.stdout) as { endpoints: { requests: number }[] }[])[0]!.endpoints[0]!.requests).toBe(3);
    const budgets = await gwctl(['budgets', '--local', '--admin-addr', addr, '-o', 'json']);
    expect(budgets.code).toBe(0);
    expect(budgets.stderr).toBe(`gwctl: warning: ${addr}: worker thread 1 did not answer (worker 1 did not answer view within 2s); the global answers it got are not included\n`);
    const doc = JSON.parse(budgets.stdout) as { proxies: { missingWorkers?: unknown }[]; budgets: { key: string; used: number }[] };
    expect(doc.proxies[0]!.missingWorkers).toEqual(missingWorkers);
    expect(doc.budgets.map((b) => [b.key, b.used])).toEqual([['dave', 4]]);
  });

  it('a /logging answer that is not a log level', async () => {
    const addr = await admin((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"message":null}'));
    const r = await gwctl(['log', '--local', '--admin-addr', addr]);
    expect(r.code).toBe(8);
    expectOneLine(r, /^gwctl: \/logging answered without the log level \("current log level is <directive>"\): \{"message":null\}$/m);
  });
});

describe('a stalled admin server: exit 11 after --timeout', () => {
  it('accepts the connection and never answers', async () => {
    const addr = await admin(() => undefined);
    const r = await gwctl(['config', 'all', '--local', '--admin-addr', addr, '--timeout', '200ms']);
    expect(r.code).toBe(11);
    expectOneLine(r, new RegExp(`^gwctl: the admin server at ${addr} stalled: no response headers within 200ms \\(GET /config_dump\\); --timeout sets the limit$`, 'm'));
  });

  it('sends headers and part of the body, then nothing', async () => {
    const addr = await admin((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"routes":');
    });
    const r = await gwctl(['config', 'all', '--local', '--admin-addr', addr, '--timeout', '200ms']);
    expect(r.code).toBe(11);
    expectOneLine(r, /^gwctl: the admin server at .* stalled: no further byte of the answer within 200ms \(GET \/config_dump\)/m);
  });

  it('a trace stream that goes silent: exit 11 after the stream idle limit, not at --timeout', async () => {
    const addr = await admin((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(ARMED);
    });
    const target = { ...localTarget(addr, '--admin-addr', 50), streamIdleMs: 300 };
    const err = await drive(target, await planTrace({}, undefined), { onEvent: () => undefined, onArmed: () => undefined, signal: new AbortController().signal }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GwctlError);
    expect((err as GwctlError).code).toBe('TG_GWCTL_ADMIN_TIMEOUT');
    expect((err as GwctlError).message).toBe(`the admin server at ${addr} stalled: no byte of the stream (not even a keepalive) within 300ms (GET /debug/trace); --timeout sets the limit`);
  });

  it('--timeout takes durations from 1ms to 1h', async () => {
    for (const bad of ['0s', 'soon', '2h', '-1s']) {
      const r = await gwctl(['config', 'all', '--local', '--timeout', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toMatch(/^gwctl: option '--timeout <duration>' argument '.*' is invalid\. must be/m);
    }
  });
});

describe('a trace waiting for its request on a real proxy', () => {
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  beforeAll(async () => {
    // Keepalives every 20 ms; gwctl's stream idle limit below is 600 ms (30 keepalives, so a
    // loaded machine's event-loop stall does not pass for a silent stream).
    proxy = await startProxy({ traceKeepaliveMs: 20 });
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('is kept open by keepalives past the stream idle limit and then traces the request', async () => {
    // The connect limit is generous: what is under test is the stream's idle limit.
    const target = { ...localTarget(proxy.adminAddr, '--admin-addr', 10_000), streamIdleMs: 600 };
    const events: string[] = [];
    // Three idle limits' worth of keepalives (90 at 20 ms): only they kept the stream open.
    let keptAlive!: () => void;
    const threeIdleLimits = new Promise<void>((r) => (keptAlive = r));
    let keepalives = 0;
    const onComment = (text: string) => {
      if (text === 'keepalive' && ++keepalives === 90) keptAlive();
    };
    const run = drive(target, await planTrace({}, undefined), { onEvent: (e) => events.push(e.message.type), onArmed: () => undefined, onComment, signal: new AbortController().signal });
    await threeIdleLimits;
    expect((await proxy.send('/v1/models')).status).toBe(200);
    await run;
    expect(events.at(-1)).toBe('requestFinished');
  });
});
