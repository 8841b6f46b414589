// Armed trace sessions are capped (config.maxTraceSessions): each waiting session costs every
// request a filter evaluation, so an admin client cannot slow the data plane without bound.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { send, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  up = await startUpstream();
  gw = await startGateway((port) => ({ config: { maxTraceSessions: 2 }, binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'all', backends: [{ host: up.host }] }] }] }] }));
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

/** Opens a trace stream and resolves once its opening comment says it is armed; rejects on any other answer. */
function arm(): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    httpRequest(`${gw.adminUrl}/debug/trace`, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET /debug/trace answered ${res.statusCode}, expected 200`));
        return;
      }
      res.once('data', () => resolve(res));
    })
      .on('error', reject)
      .end();
  });
}

/** What a further GET /debug/trace is answered: a refusal read whole, or an armed stream (200) closed at once. */
function another(): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(`${gw.adminUrl}/debug/trace`, (res) => {
      if (res.statusCode === 200) {
        res.destroy();
        resolve({ status: 200, body: '' });
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

const waiting = async () => ((await (await fetch(`${gw.adminUrl}/debug/tasks`)).json()) as { traceSessions: unknown[] }).traceSessions.length;

it('refuses a session beyond the cap with 429 and a catalog code, and accepts one again when a session closes', async () => {
  const first = await arm();
  const second = await arm();
  const refused = await another();
  expect(refused.status).toBe(429);
  expect(refused.body).toMatch(/^TG_TRACE_SESSIONS_FULL: 2 trace sessions are already waiting; .*config\.maxTraceSessions/);
  first.destroy();
  await expect.poll(waiting).toBe(1);
  const third = await arm();
  expect(await waiting()).toBe(2);
  second.destroy();
  third.destroy();
  await expect.poll(waiting).toBe(0);
  expect((await send(`${gw.url}/x`)).status).toBe(200);
});

it('rejects a cap that is not a positive integer at load, naming the field', async () => {
  await expect(startGateway((port) => ({ config: { maxTraceSessions: 0 }, binds: [{ port, listeners: [{ name: 'main', protocol: 'HTTP', routes: [] }] }] }))).rejects.toThrow(
    /config\.maxTraceSessions/,
  );
});
