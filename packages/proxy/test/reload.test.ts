// Hot reload: an edited file serves without a restart; a bad edit is refused with a log line
// naming the problem and the last good config keeps serving; requests in flight finish on the
// config they started with; new and removed ports open and close.
import { afterEach, describe, expect, it } from 'vitest';
import { collectUntilReleased } from '@tollgate/testkit';
import { echoed, onFreePort, send, simpleConfig, startGateway, startUpstream, type Upstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(handler?: Parameters<typeof startUpstream>[0]) {
  const up = await startUpstream(handler);
  const other = await startUpstream((_req, res) => res.end('other'));
  const gw = await startGateway((port) => simpleConfig(port, [{ name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: up.host }] }]));
  cleanups.push(() => gw.close(), () => up.close(), () => other.close());
  return { up, other, gw, port: gw.port };
}

function tagged(up: Upstream, name: string, path: string) {
  return {
    name,
    matches: [{ path: { value: path } }],
    filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: name }] } }],
    backends: [{ host: up.host }],
  };
}

describe('hot reload', () => {
  it('serves an edited config without a restart', async () => {
    const { up, gw, port } = await setup();
    expect((await send(`${gw.url}/b`)).status).toBe(404);
    const before = gw.gateway.snapshot.version;
    expect(await gw.rewrite(simpleConfig(port, [tagged(up, 'a', '/a'), tagged(up, 'b', '/b')]))).toBe('reloaded');
    expect(echoed(await send(`${gw.url}/b`)).headers['x-route']).toBe('b');
    expect(gw.gateway.snapshot.version).not.toBe(before);
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { version: string; routes: { name: string }[] };
    expect(dump.version).toBe(gw.gateway.snapshot.version);
    expect(dump.routes.map((r) => r.name)).toEqual(['main/a', 'main/b']);
  });

  it('refuses a bad edit, logs the field, and keeps serving the last good config', async () => {
    const { gw, port } = await setup();
    const version = gw.gateway.snapshot.version;
    const bad = simpleConfig(port, [{ name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: 'no-port-here' }] }]);
    expect(await gw.rewrite(bad)).toBe('refused');
    const line = gw.logs.messages().find((m) => m.startsWith('config reload refused'));
    expect(line).toContain('binds[0].listeners[0].routes[0].backends[0].host');
    expect(line).toContain('"no-port-here"');
    expect(gw.gateway.snapshot.version).toBe(version);
    expect((await send(`${gw.url}/a`)).status).toBe(200);
    // Unparseable YAML is refused the same way.
    expect(await gw.rewrite('binds: [ {')).toBe('refused');
    expect((await send(`${gw.url}/a`)).status).toBe(200);
  });

  it('lets a request in flight finish on the config it started with', async () => {
    let releaseSlow: (() => void) | undefined;
    let signalArrived: () => void = () => undefined;
    const arrived = new Promise<void>((resolve) => (signalArrived = resolve));
    const { gw, port, other } = await setup((_req, res) => {
      releaseSlow = () => res.end('from-old-backend');
      signalArrived();
    });
    const inflight = send(`${gw.url}/a`);
    await arrived;
    expect(await gw.rewrite(simpleConfig(port, [{ name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: other.host }] }]))).toBe('reloaded');
    releaseSlow!();
    expect((await inflight).body).toBe('from-old-backend');
    expect((await send(`${gw.url}/a`)).body).toBe('other');
  });

  it('opens a new port and closes a removed one', async () => {
    const { up, gw, port } = await setup();
    const two = (port2: number) => ({ binds: [...(simpleConfig(port, [tagged(up, 'a', '/a')]).binds as unknown[]), { port: port2, listeners: [{ name: 'second', protocol: 'HTTP', routes: [tagged(up, 'z', '/z')] }] }] });
    // A reload refused because another process took the probed port is tried on another.
    const port2 = await onFreePort(async (p) => {
      if ((await gw.rewrite(two(p))) !== 'reloaded') throw new Error(gw.gateway.source.state().lastError ?? 'refused');
      return p;
    });
    expect(echoed(await send(`http://127.0.0.1:${port2}/z`)).headers['x-route']).toBe('z');
    expect(await gw.rewrite({ binds: [{ port: port2, listeners: [{ name: 'second', protocol: 'HTTP', routes: [tagged(up, 'z', '/z')] }] }] })).toBe('reloaded');
    await expect(send(`http://127.0.0.1:${port}/a`)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('refuses a reload whose new port is taken, keeping the old config', async () => {
    const { up, gw, port } = await setup();
    const blocker = await startUpstream();
    cleanups.push(() => blocker.close());
    const withTaken = { binds: [...(simpleConfig(port, [tagged(up, 'a', '/a')]).binds as unknown[]), { port: blocker.port, listeners: [{ name: 'x', protocol: 'HTTP', routes: [tagged(up, 'x', '/x')] }] }] };
    const version = gw.gateway.snapshot.version;
    expect(await gw.rewrite(withTaken)).toBe('refused');
    expect(gw.gateway.source.state().lastError).toBe(`bind 0.0.0.0:${blocker.port} (listener x) is already in use; stop the other process on port ${blocker.port} or change binds[].port`);
    expect(gw.logs.messages()).toContain(`config reload refused, the last good config keeps serving: ${gw.gateway.source.state().lastError}`);
    expect(gw.gateway.snapshot.version).toBe(version);
    expect((await send(`${gw.url}/a`)).status).toBe(200);
  });

  it('refuses a reload whose new address is not of this machine, naming the bind and its listener', async () => {
    const { up, gw, port } = await setup();
    // Port 1: the address is refused before the port is looked at.
    // 198.19.255.254: a test-range address no interface here has.
    const elsewhere = { binds: [...(simpleConfig(port, [tagged(up, 'a', '/a')]).binds as unknown[]), { port: 1, address: '198.19.255.254', listeners: [{ name: 'edge', protocol: 'HTTP', routes: [tagged(up, 'e', '/e')] }] }] };
    expect(await gw.rewrite(elsewhere)).toBe('refused');
    expect(gw.gateway.source.state().lastError).toBe(`bind 198.19.255.254:1 (listener edge): cannot listen on 198.19.255.254: it is not an address of this machine (EADDRNOTAVAIL); change binds[].address`);
    expect((await send(`${gw.url}/a`)).status).toBe(200);
  });
});

describe('metrics across a reload', () => {
  it('stops exporting the series of a route the edited config removed', async () => {
    const { up, gw, port } = await setup();
    // Read over HTTP: with several threads /metrics is their merged series.
    const metrics = async () => (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    expect(await gw.rewrite(simpleConfig(port, [tagged(up, 'a', '/a'), tagged(up, 'b', '/b')]))).toBe('reloaded');
    expect((await send(`${gw.url}/b`)).status).toBe(200);
    expect(await metrics()).toContain('tollgate_requests_total{route="main/b",status="200"} 1');
    expect(await gw.rewrite(simpleConfig(port, [tagged(up, 'a', '/a')]))).toBe('reloaded');
    expect(await metrics()).not.toContain('route="main/b"');
    expect((await send(`${gw.url}/a`)).status).toBe(200);
    expect(await metrics()).toContain('tollgate_requests_total{route="main/a",status="200"} 1');
  });
});

describe('memory across reloads', () => {
  it('keeps the config serving now, not the ones it replaced: their snapshots, routes and compiled parts are released', async () => {
    const up = await startUpstream();
    // Enough routes that a reload, whose routes are all new objects, outgrows what the compiled
    // tables keep as a layer over the last ones (routes-gathered.ts).
    const routes = (tag: string) => Array.from({ length: 40 }, (_, i) => tagged(up, `r${i}`, `/${tag}/${i}`));
    const gw = await startGateway((port) => simpleConfig(port, routes('one')));
    cleanups.push(() => gw.close(), () => up.close());
    const port = gw.port;
    const held = (snapshot: typeof gw.gateway.snapshot) => [new WeakRef(snapshot), new WeakRef(snapshot.binds[0]!.listeners[0]!.routes[7]!)];
    const first = held(gw.gateway.snapshot);
    expect(await gw.rewrite(simpleConfig(port, routes('two')))).toBe('reloaded');
    expect((await send(`${gw.url}/two/7`)).status).toBe(200);
    await collectUntilReleased(first);
    expect(first.map((w) => w.deref() === undefined), 'the start-up snapshot and its route').toEqual([true, true]);
    const second = held(gw.gateway.snapshot);
    expect(await gw.rewrite(simpleConfig(port, routes('three')))).toBe('reloaded');
    expect((await send(`${gw.url}/three/7`)).status).toBe(200);
    await collectUntilReleased(second);
    expect(second.map((w) => w.deref() === undefined), 'the replaced snapshot and its route').toEqual([true, true]);
  });
});
