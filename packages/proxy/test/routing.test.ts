// Route selection over real sockets: path kinds, method, headers, query parameters,
// hostnames (listener and route, wildcards), precedence, and 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoed, send, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

// Each route tags the request with its own name so the test sees which one served it.
function route(name: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    ...extra,
    filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: name }] } }],
    backends: [{ host: up.host }],
  };
}

async function routed(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<string | number> {
  const r = await send(`${gw.url}${path}`, { headers, method });
  if (r.status !== 200) return r.status;
  return echoed(r).headers['x-route']!;
}

beforeAll(async () => {
  up = await startUpstream();
  gw = await startGateway((port) => ({
    binds: [
      {
        port,
        listeners: [
          {
            name: 'main',
            protocol: 'HTTP',
            routes: [
              route('root'),
              route('prefix-api', { matches: [{ path: { type: 'PathPrefix', value: '/api' } }] }),
              route('prefix-api-v1', { matches: [{ path: { type: 'PathPrefix', value: '/api/v1/' } }] }),
              route('exact-api-v1', { matches: [{ path: { type: 'Exact', value: '/api/v1' } }] }),
              route('regex-items', { matches: [{ path: { type: 'RegularExpression', value: '/items/[0-9]+' } }] }),
              route('post-api', { matches: [{ path: { type: 'PathPrefix', value: '/api' }, method: 'POST' }] }),
              route('header-api', { matches: [{ path: { type: 'PathPrefix', value: '/api' }, headers: [{ name: 'X-Tenant', value: 'a' }] }] }),
              route('header-regex', { matches: [{ path: { type: 'PathPrefix', value: '/api' }, headers: [{ name: 'x-tenant', type: 'RegularExpression', value: 'b[0-9]+' }] }] }),
              route('query-api', { matches: [{ path: { type: 'PathPrefix', value: '/api' }, queryParams: [{ name: 'debug', value: '1' }] }] }),
              route('host-exact', { hostnames: ['api.example.com'], matches: [{ path: { type: 'PathPrefix', value: '/h' } }] }),
              route('host-wild', { hostnames: ['*.example.com'], matches: [{ path: { type: 'PathPrefix', value: '/h' } }] }),
              route('host-wild-only', { hostnames: ['*.example.com'], matches: [{ path: { type: 'PathPrefix', value: '/w' } }] }),
            ],
          },
          {
            name: 'shop',
            protocol: 'HTTP',
            hostname: '*.shop.test',
            routes: [route('shop-any'), route('shop-detached', { hostnames: ['other.test'] }), route('shop-narrow', { hostnames: ['eu.shop.test'], matches: [{ path: { type: 'PathPrefix', value: '/n' } }] })],
          },
        ],
      },
    ],
  }));
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

describe('path matching', () => {
  it('PathPrefix matches on element boundaries', async () => {
    expect(await routed('/api')).toBe('prefix-api');
    expect(await routed('/api/')).toBe('prefix-api');
    expect(await routed('/api/x')).toBe('prefix-api');
    expect(await routed('/apix')).toBe('root');
  });
  it('the longest prefix wins, a trailing slash in the prefix is ignored', async () => {
    expect(await routed('/api/v1/chat')).toBe('prefix-api-v1');
    expect(await routed('/api/v10')).toBe('prefix-api');
  });
  it('Exact beats any prefix', async () => {
    expect(await routed('/api/v1')).toBe('exact-api-v1');
    expect(await routed('/api/v1/')).toBe('prefix-api-v1');
  });
  it('RegularExpression must match the whole path', async () => {
    expect(await routed('/items/42')).toBe('regex-items');
    expect(await routed('/items/42/x')).toBe('root');
  });
  it('the query string is not part of the path', async () => {
    expect(await routed('/api/v1?x=1')).toBe('exact-api-v1');
  });
});

describe('method, header and query matches', () => {
  it('a method match outranks header and query matches on the same prefix', async () => {
    expect(await routed('/api/x', { 'x-tenant': 'a' }, 'POST')).toBe('post-api');
  });
  it('headers match case-insensitively by name, exactly or by regex on value', async () => {
    expect(await routed('/api/x', { 'x-tenant': 'a' })).toBe('header-api');
    expect(await routed('/api/x', { 'x-tenant': 'b12' })).toBe('header-regex');
    expect(await routed('/api/x', { 'x-tenant': 'b12x' })).toBe('prefix-api');
  });
  it('a header match outranks a query match', async () => {
    expect(await routed('/api/x?debug=1', { 'x-tenant': 'a' })).toBe('header-api');
    expect(await routed('/api/x?debug=1')).toBe('query-api');
    expect(await routed('/api/x?debug=2')).toBe('prefix-api');
  });
});

describe('hostnames', () => {
  it('a precise hostname outranks a wildcard, which outranks none', async () => {
    expect(await routed('/h', { host: 'api.example.com' })).toBe('host-exact');
    expect(await routed('/h', { host: 'web.example.com:8080' })).toBe('host-wild');
    expect(await routed('/h', { host: 'a.b.example.com' })).toBe('host-wild');
    expect(await routed('/h', { host: 'example.com' })).toBe('root');
  });
  it('falls through to a less specific hostname when the specific one has no matching route', async () => {
    expect(await routed('/w', { host: 'api.example.com' })).toBe('host-wild-only');
  });
  it('a listener hostname selects the listener, intersected with route hostnames', async () => {
    expect(await routed('/n', { host: 'eu.shop.test' })).toBe('shop-narrow');
    expect(await routed('/n', { host: 'us.shop.test' })).toBe('shop-any');
    expect(await routed('/', { host: 'other.test' })).toBe('root');
  });
  it('warns about a route whose hostnames do not intersect its listener', () => {
    expect(gw.logs.messages().some((m) => m.includes('shop/shop-detached is not attached'))).toBe(true);
  });
});

describe('no match', () => {
  it('answers 404 with a short body', async () => {
    const g = await startGateway((port) => ({
      binds: [{ port, listeners: [{ name: 'l', protocol: 'HTTP', routes: [route('only', { matches: [{ path: { type: 'Exact', value: '/only' } }] })] }] }],
    }));
    try {
      const r = await send(`${g.url}/other`);
      expect(r.status).toBe(404);
      expect(r.body).toBe('no route matches this request');
      expect(up.requests.every((q) => q.url !== '/other')).toBe(true);
    } finally {
      await g.close();
    }
  });
});
