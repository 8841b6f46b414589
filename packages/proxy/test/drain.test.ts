// The drain of a `tollgate` process on SIGTERM, as a pod is stopped: it stops accepting, lets
// the requests in flight finish, answers what arrives on connections already open (and closes
// them after), closes idle ones, then exits 0. With TOLLGATE_TEST_PROXY_WORKERS the process
// serves on that many threads, and each of them drains the connections it holds.
import { once } from 'node:events';
import { connect } from 'node:net';
import { Client, type Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { send, simpleConfig, startUpstream } from './helpers.js';
import { PROCESS_TIMEOUT_MS, tollgateProcesses } from './support/tollgate-child.js';

const start = tollgateProcesses();

/** A request answered during the drain: served, its connection closed after it; then the process exits 0. */
async function expectClosingAnswer(r: Dispatcher.ResponseData, body: string, exited: Promise<unknown[]>): Promise<void> {
  expect(r.statusCode).toBe(200);
  expect(await r.body.text()).toBe(body);
  expect(r.headers.connection).toBe('close');
  expect((await exited)[0]).toBe(0);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

describe('tollgate drains on SIGTERM', { timeout: PROCESS_TIMEOUT_MS }, () => {
  it('SIGTERM drains the request in flight, then exits 0', async () => {
    let release: (() => void) | undefined;
    let arrived: () => void = () => undefined;
    const got = new Promise<void>((r) => (arrived = r));
    const up = await startUpstream((_req, res) => {
      release = () => res.end('finished');
      arrived();
    });
    try {
      const { child, ports } = await start(([port]) => simpleConfig(port!, [{ name: 'r', backends: [{ host: up.host }] }]));
      const p = ports[0]!;
      const inflight = send(`http://127.0.0.1:${p}/slow`);
      await got;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      // Stop accepting: the drain closes the listener while the request is still open.
      await expect.poll(() => portOpen(p)).toBe(false);
      release!();
      const r = await inflight;
      expect(r.status).toBe(200);
      expect(r.body).toBe('finished');
      expect((await exited)[0]).toBe(0);
    } finally {
      await up.close();
    }
  });

  it('during the drain, a request on a kept-alive connection is served and the connection closed (not refused with 503)', async () => {
    // Behind a Service, clients keep connections to a pod that is being stopped: what they
    // send on them before they notice must still be answered.
    let release: (() => void) | undefined;
    let arrived: () => void = () => undefined;
    const got = new Promise<void>((r) => (arrived = r));
    const up = await startUpstream((req, res) => {
      if (req.url !== '/slow') return res.end('fast');
      release = () => res.end('finished');
      arrived();
    });
    const { child, ports } = await start(([port]) => simpleConfig(port!, [{ name: 'r', backends: [{ host: up.host }] }]));
    const p = ports[0]!;
    // One connection, reused for both requests.
    const client = new Client(`http://127.0.0.1:${p}`, { pipelining: 1 });
    try {
      const slow = client.request({ method: 'GET', path: '/slow' });
      await got;
      const exited = once(child, 'exit');
      // The second request waits behind the first on the same connection (pipelining 1).
      const next = client.request({ method: 'GET', path: '/next' });
      child.kill('SIGTERM');
      await expect.poll(() => portOpen(p)).toBe(false);
      release!();
      const a = await slow;
      expect(a.statusCode).toBe(200);
      expect(await a.body.text()).toBe('finished');
      await expectClosingAnswer(await next, 'fast', exited);
    } finally {
      await client.destroy();
      await up.close();
    }
  });

  it('during the drain, an idle kept-alive connection stays open for its next request (drainIdleTimeout), which is served and closes it', async () => {
    // Closing an idle connection at SIGTERM races with the client sending on it: the request
    // would be reset though no server received it. A long drainIdleTimeout leaves no race in
    // this test: the exit is the connection closing after its answer, not the timeout.
    const up = await startUpstream((req, res) => res.end(`served ${req.url}`));
    const { child, ports } = await start(([port]) => ({ ...simpleConfig(port!, [{ name: 'r', backends: [{ host: up.host }] }]), config: { drainIdleTimeout: '10m' } }));
    const p = ports[0]!;
    const client = new Client(`http://127.0.0.1:${p}`, { pipelining: 1 });
    try {
      const first = await client.request({ method: 'GET', path: '/first' });
      expect(await first.body.text()).toBe('served /first');
      // The connection is idle now.
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await expect.poll(() => portOpen(p)).toBe(false);
      await expectClosingAnswer(await client.request({ method: 'GET', path: '/next' }), 'served /next', exited);
    } finally {
      await client.destroy();
      await up.close();
    }
  });

  it('the drain closes a kept-alive connection that stays idle, then exits 0', async () => {
    const up = await startUpstream((_req, res) => res.end('ok'));
    const { child, ports } = await start(([port]) => ({ ...simpleConfig(port!, [{ name: 'r', backends: [{ host: up.host }] }]), config: { drainIdleTimeout: '1s' } }));
    const socket = connect(ports[0]!, '127.0.0.1');
    try {
      await once(socket, 'connect');
      socket.write('GET /once HTTP/1.1\r\nHost: x\r\n\r\n');
      let received = '';
      socket.setEncoding('utf8').on('data', (d: string) => (received += d));
      await expect.poll(() => received).toMatch(/\r\n\r\nok$/);
      const closed = once(socket, 'end');
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      // The server ends the idle connection (a FIN, no reset) and the process exits.
      await closed;
      expect((await exited)[0]).toBe(0);
    } finally {
      socket.destroy();
      await up.close();
    }
  });

  it('a connection closed before it sent anything holds nothing: the drain does not wait for the request headers timeout', async () => {
    // A TCP probe (a load balancer's, a kubelet's): connects and closes. The headers timeout is
    // long, so a drain that waited for it would outlast the test.
    const up = await startUpstream((_req, res) => res.end('ok'));
    const { child, ports } = await start(([port]) => ({ ...simpleConfig(port!, [{ name: 'r', backends: [{ host: up.host }] }]), config: { requestHeadersTimeout: '10m' } }));
    try {
      const probe = connect(ports[0]!, '127.0.0.1');
      await once(probe, 'connect');
      probe.end();
      await once(probe, 'close');
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      expect((await exited)[0]).toBe(0);
    } finally {
      await up.close();
    }
  });
});
