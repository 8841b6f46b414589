// timeouts.backendRequest is kept to the millisecond: a sub-second deadline fires when it says,
// not on the next tick of a coarse (about 1 s) timer wheel. The backend's response body idle
// timeout cuts a body that stopped, and never one whose chunks keep coming.
import { once } from 'node:events';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const open: (TestGateway | Upstream)[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('timeouts.backendRequest', () => {
  it('250ms answers 504 before a backend that takes 5s has answered', async () => {
    // A coarse timer fires a 250 ms deadline 0.5 to 1 s late, and a loaded machine later still;
    // a backend answering soon after the deadline would beat it. The test orders two events; it
    // measures no time.
    let backendAnswered = false;
    const up = await startUpstream((_req, res) => {
      setTimeout(() => {
        backendAnswered = true;
        res.end('late answer');
      }, 5000);
    });
    open.push(up);
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', timeouts: { backendRequest: '250ms' }, backends: [{ host: up.host }] }]));
    open.push(gw);
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(504);
    expect(r.body).toContain('upstream request timeout');
    expect(backendAnswered).toBe(false);
  });
});

/** GET through the gateway: the status, the body received, and whether the response ended whole. */
function fetchWhole(url: string): Promise<{ status: number; body: string; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body, complete: res.complete }));
    });
    req.on('error', reject);
  });
}

describe("the backend's response body idle timeout", () => {
  it('cuts a response whose backend stops sending mid-body', async () => {
    let backendClosed: Promise<unknown> = Promise.resolve();
    const up = await startUpstream((req, res) => {
      backendClosed = once(req.socket, 'close');
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part;');
    });
    open.push(up);
    const gw = await startGateway((port) => ({ ...simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]), config: { backendBodyIdleTimeout: '300ms' } }));
    open.push(gw);
    const r = await fetchWhole(`${gw.url}/`);
    expect(r.status).toBe(200);
    expect(r.body).toBe('first part;');
    expect(r.complete).toBe(false);
    // The exchange was cut, and with it the connection to the backend.
    await backendClosed;
  });

  it('lets a response through whose chunks keep coming, for longer than the timeout in all', async () => {
    const chunks = 15;
    const up = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let sent = 0;
      const timer = setInterval(() => {
        res.write(`${sent};`);
        if (++sent === chunks) {
          clearInterval(timer);
          res.end();
        }
      }, 40);
    });
    open.push(up);
    const gw = await startGateway((port) => ({ ...simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]), config: { backendBodyIdleTimeout: '400ms' } }));
    open.push(gw);
    const r = await fetchWhole(`${gw.url}/`);
    expect(r.status).toBe(200);
    expect(r.complete).toBe(true);
    expect(r.body).toBe(Array.from({ length: chunks }, (_, i) => `${i};`).join(''));
  });

  it('is config.backendBodyIdleTimeout: 5m by default, shown in config_dump; 0s is refused, naming the setting', async () => {
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:9' }] }]));
    open.push(gw);
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { settings: { backendBodyIdleTimeoutMs: number } };
    expect(dump.settings.backendBodyIdleTimeoutMs).toBe(300_000);
    await expect(startGateway((port) => ({ ...simpleConfig(port, [{ name: 'r', backends: [{ host: '127.0.0.1:9' }] }]), config: { backendBodyIdleTimeout: '0s' } }))).rejects.toThrow(/config\.backendBodyIdleTimeout: .*0s/);
  });
});
