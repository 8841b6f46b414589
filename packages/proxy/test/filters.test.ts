// The standard Gateway API filters over real sockets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoed, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  up = await startUpstream((req, res, body) => {
    res.setHeader('x-upstream', 'yes');
    res.setHeader('x-remove-me', 'gone');
    res.setHeader('x-multi', 'one');
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString() }));
  });
  const b = [{ host: up.host }];
  const prefix = (value: string) => [{ path: { type: 'PathPrefix', value } }];
  gw = await startGateway((port) =>
    simpleConfig(port, [
      {
        name: 'req-headers',
        matches: prefix('/reqh'),
        filters: [
          {
            type: 'RequestHeaderModifier',
            requestHeaderModifier: {
              set: [{ name: 'X-Set', value: 'set-value' }],
              add: [{ name: 'x-add', value: 'added' }],
              remove: ['X-Remove'],
            },
          },
        ],
        backends: b,
      },
      {
        name: 'res-headers',
        matches: prefix('/resh'),
        filters: [
          {
            type: 'ResponseHeaderModifier',
            responseHeaderModifier: { set: [{ name: 'x-upstream', value: 'replaced' }], add: [{ name: 'x-multi', value: 'two' }], remove: ['x-remove-me'] },
          },
        ],
        backends: b,
      },
      { name: 'rewrite-prefix', matches: prefix('/old'), filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' } } }], backends: b },
      { name: 'rewrite-root', matches: prefix('/strip'), filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/' } } }], backends: b },
      {
        name: 'rewrite-full',
        matches: prefix('/full'),
        filters: [{ type: 'URLRewrite', urlRewrite: { hostname: 'internal.example.com', path: { type: 'ReplaceFullPath', replaceFullPath: '/fixed' } } }],
        backends: b,
      },
      { name: 'redirect-https', matches: prefix('/secure'), filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: 301 } }], backends: [] },
      { name: 'redirect-same', matches: prefix('/moved'), filters: [{ type: 'RequestRedirect', requestRedirect: { hostname: 'other.example.com', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/here' } } }], backends: [] },
      { name: 'redirect-port', matches: prefix('/port'), filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'http', port: 8080, path: { type: 'ReplaceFullPath', replaceFullPath: '/p' } } }], backends: [] },
    ]),
  );
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

describe('RequestHeaderModifier', () => {
  it('sets, adds to and removes request headers', async () => {
    const r = echoed(await send(`${gw.url}/reqh`, { headers: { 'x-set': 'client', 'x-add': 'client', 'x-remove': 'bye' } }));
    expect(r.headers['x-set']).toBe('set-value');
    expect(r.headers['x-add']).toBe('client,added');
    expect(r.headers['x-remove']).toBeUndefined();
  });
});

describe('ResponseHeaderModifier', () => {
  it('sets, adds to and removes response headers', async () => {
    const r = await send(`${gw.url}/resh`);
    expect(r.headers['x-upstream']).toBe('replaced');
    expect(r.headers['x-multi']).toBe('one,two');
    expect(r.headers['x-remove-me']).toBeUndefined();
  });
});

describe('URLRewrite', () => {
  it('ReplacePrefixMatch swaps the matched prefix and keeps the rest and the query', async () => {
    expect(echoed(await send(`${gw.url}/old/a/b?x=1`)).url).toBe('/new/a/b?x=1');
    expect(echoed(await send(`${gw.url}/old`)).url).toBe('/new');
  });
  it('ReplacePrefixMatch with "/" never produces a double slash', async () => {
    expect(echoed(await send(`${gw.url}/strip/a`)).url).toBe('/a');
    expect(echoed(await send(`${gw.url}/strip`)).url).toBe('/');
  });
  it('ReplaceFullPath and hostname rewrite the path and the Host header', async () => {
    const r = echoed(await send(`${gw.url}/full/anything?q=2`, { headers: { host: 'public.example.com' } }));
    expect(r.url).toBe('/fixed?q=2');
    expect(r.headers.host).toBe('internal.example.com');
    expect(r.headers['x-forwarded-host']).toBe('public.example.com');
  });
});

describe('RequestRedirect', () => {
  it('a scheme change takes the well-known port, left out of the Location', async () => {
    const r = await send(`${gw.url}/secure/x?a=1`, { headers: { host: 'shop.example.com' } });
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe('https://shop.example.com/secure/x?a=1');
  });
  it('without scheme or port the listener port is kept; default status 302', async () => {
    const r = await send(`${gw.url}/moved/y`, { headers: { host: 'shop.example.com' } });
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe(`http://other.example.com:${gw.port}/here/y`);
  });
  it('an explicit port is used', async () => {
    const r = await send(`${gw.url}/port/z`, { headers: { host: 'shop.example.com' } });
    expect(r.headers.location).toBe('http://shop.example.com:8080/p');
  });
  it('never calls a backend', () => {
    expect(up.requests.some((q) => q.url?.startsWith('/secure') || q.url?.startsWith('/moved') || q.url?.startsWith('/port'))).toBe(false);
  });
});
