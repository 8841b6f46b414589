// Request bodies built to hurt the proxy: each must fail its own request with a catalog error
// and leave the process serving the next request.
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { MockLlm } from '@tollgate/mock-llm';
import { describe, expect, it } from 'vitest';
import { closedAfterEach, freePort, send, simpleConfig, startGateway, startUpstream, type TestGateway, useMockLlm } from './helpers.js';

let llm: MockLlm;
useMockLlm((started) => (llm = started));
const cleanups = closedAfterEach();

async function gateway(routes: unknown[], listener: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, routes, listener));
  cleanups.push(() => gw.close());
  return gw;
}

const chatMatch = [{ path: { type: 'Exact', value: '/v1/chat/completions' } }];
const tokensPolicy = { traffic: { rateLimit: { local: [{ tokens: 100000, unit: 'Minutes' }] } } };

/** About 12 KB of JSON nested 6,000 levels deep, in a chat request that asks to stream. */
function deeplyNested(depth = 6000): string {
  return `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

function chat(gw: TestGateway, body: string) {
  return send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

const normal = JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] });

describe('deeply nested JSON bodies', () => {
  it('refuse the request on a metered route with 400 and keep serving', async () => {
    const gw = await gateway([{ name: 'chat', matches: chatMatch, policies: tokensPolicy, backends: [{ host: `127.0.0.1:${llm.port}` }] }]);
    const bad = await chat(gw, deeplyNested());
    expect(bad.status).toBe(400);
    expect(bad.body).toMatch(/nested/);
    const good = await chat(gw, normal);
    expect(good.status).toBe(200);
    expect(JSON.parse(good.body)).toHaveProperty('usage.total_tokens');
  });

  it('refuse the request under a gateway-level global policy and keep serving', async () => {
    const rls = `127.0.0.1:${await freePort()}`; // nothing listens: FailOpen lets requests through
    const global = {
      service: { host: rls },
      domain: 'tollgate',
      failureMode: 'FailOpen',
      timeout: '50ms',
      descriptors: [{ unit: 'Requests', entries: [{ name: 'model', expression: 'llm.model' }] }],
    };
    const gw = await gateway([{ name: 'chat', matches: chatMatch, backends: [{ host: `127.0.0.1:${llm.port}` }] }], {
      policies: { traffic: { rateLimit: { global } } },
    });
    const bad = await chat(gw, deeplyNested());
    expect(bad.status).toBe(400);
    const good = await chat(gw, normal);
    expect(good.status).toBe(200);
  });

  it('pass through untouched on a route that does not read bodies', async () => {
    const gw = await gateway([{ name: 'chat', matches: chatMatch, backends: [{ host: `127.0.0.1:${llm.port}` }] }]);
    // mock-llm answers what it makes of the body; the proxy must not have looked at it.
    const r = await chat(gw, deeplyNested(200));
    expect(r.status).toBeLessThan(500);
    expect((await chat(gw, normal)).status).toBe(200);
  });
});

describe('clients that go away or wait for 100-continue', () => {
  it('a client aborting mid-body is logged at debug as one line, never an error, and the backend is not blamed', async () => {
    // An echo backend reads the whole body before answering, so the request stays in flight.
    const echo = await startUpstream();
    cleanups.push(() => echo.close());
    const gw = await startGateway(
      (port) => ({ config: { logLevel: 'debug' }, ...simpleConfig(port, [{ name: 'chat', matches: chatMatch, policies: tokensPolicy, backends: [{ host: echo.host }] }, { name: 'up', backends: [{ host: echo.host }] }]) }),
    );
    cleanups.push(() => gw.close());
    for (const path of ['/v1/chat/completions', '/upload']) {
      const socket = connect(gw.port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write(`POST ${path} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`);
      await expect.poll(async () => ((await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { requests: unknown[] }).requests.length).toBe(1);
      socket.destroy();
      await expect.poll(async () => ((await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { requests: unknown[] }).requests.length).toBe(0);
    }
    expect(gw.logs.lines.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
    expect(gw.logs.lines.filter((l) => l.level === 'debug' && /TG_CLIENT_GONE/.test(JSON.stringify(l)))).toHaveLength(2);
    expect(gw.logs.lines.some((l) => 'err' in l || 'stack' in l)).toBe(false);
    const dump = JSON.parse(await (await fetch(`${gw.adminUrl}/config_dump`)).text()) as { backends: { endpoints: { health: number }[] }[] };
    expect(dump.backends[0]!.endpoints[0]!.health).toBe(1);
  });

  it('Expect: 100-continue is answered and the body forwarded', async () => {
    const gw = await gateway([{ name: 'chat', matches: chatMatch, policies: tokensPolicy, backends: [{ host: `127.0.0.1:${llm.port}` }] }, { name: 'other', backends: [{ host: `127.0.0.1:${llm.port}` }] }]);
    for (const path of ['/v1/chat/completions', '/v1/chat/completions?x=1']) {
      const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(`${gw.url}${path}`, { method: 'POST', headers: { expect: '100-continue', 'content-type': 'application/json', 'content-length': Buffer.byteLength(normal) } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('continue', () => req.end(normal));
        req.on('error', reject);
      });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toHaveProperty('usage.total_tokens');
    }
  });
});
