// Config values over real sockets: route timeouts of 0s (none) and at the 596h maximum,
// values refused at reload while the last good config keeps serving, regular expressions that
// would backtrack, routes that only redirect, listeners without a name.
import { afterEach, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, startUpstream, type GatewayConfig, type TestGateway, type Upstream } from './helpers.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function upstream(...args: Parameters<typeof startUpstream>): Promise<Upstream> {
  const up = await startUpstream(...args);
  open.push(up);
  return up;
}

async function gateway(config: GatewayConfig): Promise<TestGateway> {
  const gw = await startGateway(config);
  open.push(gw);
  return gw;
}

/** A backend that answers `delayMs` after the request arrived (a slow backend, not a test sleep). */
function slow(delayMs: number) {
  return upstream((_req, res) => {
    setTimeout(() => res.end('late answer'), delayMs);
  });
}

describe('route timeouts', () => {
  it('timeouts.request: 0s is no timeout (Gateway API), not an immediate one', async () => {
    const up = await slow(150);
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'r', timeouts: { request: '0s', backendRequest: '0s' }, backends: [{ host: up.host }] }]));
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(200);
    expect(r.body).toBe('late answer');
  });

  it('timeouts.backendRequest: 0s waits past a shorter config.backendRequestTimeout', async () => {
    // Longer than the default timeout even at the coarsest timer resolution (about 1 s).
    const up = await slow(1100);
    const gw = await gateway((port) => ({
      config: { backendRequestTimeout: '100ms' },
      ...simpleConfig(port, [
        { name: 'none', matches: [{ path: { type: 'PathPrefix', value: '/none' } }], timeouts: { backendRequest: '0s' }, backends: [{ host: up.host }] },
        { name: 'default', backends: [{ host: up.host }] },
      ]),
    }));
    expect((await send(`${gw.url}/none`)).status).toBe(200);
    expect((await send(`${gw.url}/default`)).status).toBe(504);
  });

  it('596h, the maximum, serves normally; 597h is refused at reload and the last good config keeps serving', async () => {
    const up = await upstream();
    const config = (request: string, port: number) => simpleConfig(port, [{ name: 'r', timeouts: { request }, backends: [{ host: up.host }] }]);
    const gw = await gateway((port) => config('596h', port));
    expect((await send(`${gw.url}/`)).status).toBe(200);
    expect(await gw.rewrite(config('597h', gw.port))).toBe('refused');
    const refusal = gw.logs.messages().find((m) => m.startsWith('config reload refused'));
    expect(refusal).toContain('binds[0].listeners[0].routes[0].timeouts.request: got "597h"; expected at most 596h (the longest timer the proxy can set); 0s means no timeout');
    expect((await send(`${gw.url}/`)).status).toBe(200);
  });
});

describe('values refused at reload', () => {
  it('a header value with CR/LF, naming the field; requests keep being served', async () => {
    const up = await upstream();
    const config = (value: string, port: number) => simpleConfig(port, [{ name: 'r', filters: [{ type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-a', value }] } }], backends: [{ host: up.host }] }]);
    const gw = await gateway((port) => config('ok', port));
    expect(await gw.rewrite(config('v\r\nset-cookie: session=stolen', gw.port))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toContain(
      'routes[0].filters[0].responseHeaderModifier.set[0].value: got "v\\r\\nset-cookie: session=stolen"; expected a header value of visible characters, spaces and tabs (no CR, LF or other control characters)',
    );
    const r = await send(`${gw.url}/`);
    expect(r.status).toBe(200);
    expect(r.headers['x-a']).toBe('ok');
    expect(r.headers['set-cookie']).toBeUndefined();
  });

  it('a backend port 99999, naming the field', async () => {
    const up = await upstream();
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]));
    expect(await gw.rewrite(simpleConfig(gw.port, [{ name: 'r', backends: [{ host: '127.0.0.1:99999' }] }]))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toContain(
      'routes[0].backends[0].host: got "127.0.0.1:99999"; port 99999 is out of range; expected a port from 1 to 65535',
    );
    expect((await send(`${gw.url}/`)).status).toBe(200);
  });
});

describe('regular expressions run in linear time', () => {
  it('(a+)+$ against a long "aaaa...!" path, header and query answers, and so does the next request', async () => {
    const up = await upstream();
    const gw = await gateway(
      (port) => simpleConfig(port, [
        { name: 'path', matches: [{ path: { type: 'RegularExpression', value: '/(a+)+$' } }], backends: [{ host: up.host }] },
        { name: 'header', matches: [{ path: { type: 'PathPrefix', value: '/h' }, headers: [{ type: 'RegularExpression', name: 'x-a', value: '(a+)+$' }] }], backends: [{ host: up.host }] },
        { name: 'query', matches: [{ path: { type: 'PathPrefix', value: '/q' }, queryParams: [{ type: 'RegularExpression', name: 'q', value: '(a+)+$' }] }], backends: [{ host: up.host }] },
      ]),
    );
    // On a backtracking engine each of these takes 2^40 steps: the request would never answer.
    const evil = `${'a'.repeat(40)}!`;
    expect((await send(`${gw.url}/${evil}`)).status).toBe(404);
    expect((await send(`${gw.url}/h`, { headers: { 'x-a': evil } })).status).toBe(404);
    expect((await send(`${gw.url}/q?q=${evil}`)).status).toBe(404);
    expect((await send(`${gw.url}/${'a'.repeat(40)}`)).status).toBe(200);
    expect((await send(`${gw.url}/h`, { headers: { 'x-a': 'aaa' } })).status).toBe(200);
    expect((await send(`${gw.url}/q?q=aaa`)).status).toBe(200);
  });

  it('a pattern RE2 cannot run (a backreference) is refused at reload, naming the field', async () => {
    const up = await upstream();
    const config = (value: string, port: number) => simpleConfig(port, [{ name: 'r', matches: [{ path: { type: 'RegularExpression', value } }], backends: [{ host: up.host }] }]);
    const gw = await gateway((port) => config('/(a)+', port));
    expect(await gw.rewrite(config('/(a)\\1', gw.port))).toBe('refused');
    expect(gw.logs.messages().find((m) => m.startsWith('config reload refused'))).toContain('routes[0].matches[0].path.value: got "/(a)\\\\1": not a valid regular expression in RE2 syntax');
    expect((await send(`${gw.url}/aa`)).status).toBe(200);
  });
});

describe('config defaults', () => {
  it('a route with a RequestRedirect filter and no backends answers the redirect', async () => {
    const gw = await gateway((port) => simpleConfig(port, [{ name: 'moved', filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'new.example.com', statusCode: 301 } }] }]));
    const r = await send(`${gw.url}/a/b?x=1`, { headers: { host: 'old.example.com' } });
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe(`http://new.example.com:${gw.port}/a/b?x=1`);
  });

  it('a listener without a name is served and named listener-<port>-<index>', async () => {
    const up = await upstream();
    const gw = await gateway((port) => ({
      binds: [{ port, listeners: [{ protocol: 'HTTP', hostname: 'a.example.com', routes: [{ name: 'r', backends: [{ host: up.host }] }] }, { protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: up.host }] }] }] }],
    }));
    expect((await send(`${gw.url}/`, { headers: { host: 'a.example.com' } })).status).toBe(200);
    expect((await send(`${gw.url}/`, { headers: { host: 'b.example.com' } })).status).toBe(200);
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { listeners: { name: string; routes: string[] }[] };
    expect(dump.listeners.map((l) => [l.name, l.routes])).toEqual([
      [`listener-${gw.port}-0`, [`listener-${gw.port}-0/r`]],
      [`listener-${gw.port}-1`, [`listener-${gw.port}-1/r`]],
    ]);
  });
});
