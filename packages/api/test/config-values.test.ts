// Values a config can carry that the proxy cannot use: out-of-range ports, hosts that are no
// address, durations a timer cannot hold, header values that would split a header, patterns
// that backtrack. Each is refused at validation with the field's path and the fix.
import { describe, expect, it } from 'vitest';
import { checkRouteRule, compile, DEFAULT_LIMITS, GatewayPolicySpec, standaloneToSnapshot, validateStandaloneConfig, type Problem } from '../src/index.js';
import { cfg, problems, route } from './support.js';

const R = 'binds[0].listeners[0].routes[0]';

describe('host:port fields', () => {
  it('refuses a backend port out of range', () => {
    expect(problems(cfg([route({ backends: [{ host: '127.0.0.1:99999' }] })]))).toEqual([
      `${R}.backends[0].host: got "127.0.0.1:99999"; port 99999 is out of range; expected a port from 1 to 65535`,
    ]);
    expect(problems(cfg([route({ backends: [{ host: 'llm:0' }] })]))).toEqual([
      `${R}.backends[0].host: got "llm:0"; port 0 is only allowed for an address to listen on; expected a port from 1 to 65535`,
    ]);
  });

  it('refuses hosts that are no address', () => {
    expect(problems(cfg([route({ backends: [{ host: '300.1.1.1:80' }] })]))[0]).toBe(
      `${R}.backends[0].host: got "300.1.1.1:80"; 300.1.1.1 is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)`,
    );
    expect(problems(cfg([route({ backends: [{ host: '::1:80' }] })]))[0]).toBe(`${R}.backends[0].host: got "::1:80"; an IPv6 address takes brackets, e.g. [::1]:9000`);
    expect(problems(cfg([route({ backends: [{ host: '[::1]:80' }] })]))).toEqual([]);
  });

  it('allows port 0 on the addresses the proxy listens on, and checks bind addresses', () => {
    expect(problems(cfg([route()], {}, { config: { adminAddr: '127.0.0.1:0', metricsAddr: '[::1]:0', readinessAddr: 'localhost:15021' } }))).toEqual([]);
    expect(problems(cfg([route()], {}, { config: { adminAddr: '127.0.0.1:65536' } }))).toEqual([
      'config.adminAddr: got "127.0.0.1:65536"; port 65536 is out of range; expected a port from 0 to 65535 (0 picks a free port)',
    ]);
    const bind = (address: string) => ({ binds: [{ port: 3000, address, listeners: [{ name: 'l', protocol: 'HTTP', routes: [route()] }] }] });
    expect(problems(bind('127.0.0.1'))).toEqual([]);
    expect(problems(bind('::'))).toEqual([]);
    expect(problems(bind('0.0.0.0:3000'))).toEqual(['binds[0].address: got "0.0.0.0:3000"; expected a host without port (an IP address or a DNS name), e.g. 0.0.0.0 or ::']);
    expect(problems(bind('999.1.1.1'))).toEqual(['binds[0].address: got "999.1.1.1"; 999.1.1.1 is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)']);
  });

  it('checks config.adminAllowedHosts with the same host validator', () => {
    expect(problems(cfg([route()], {}, { config: { adminAllowedHosts: ['tollgate-admin.internal', '198.18.0.5', '[2001:db8::1]', '2001:db8::1'] } }))).toEqual([]);
    expect(problems(cfg([route()], {}, { config: { adminAllowedHosts: ['[::1', 'admin:15000', '300.1.1.1'] } }))).toEqual([
      'config.adminAllowedHosts[0]: got "[::1"; expected a host without port (an IP address or a DNS name), e.g. 0.0.0.0 or ::',
      'config.adminAllowedHosts[1]: got "admin:15000"; expected a host without port (an IP address or a DNS name), e.g. 0.0.0.0 or ::',
      'config.adminAllowedHosts[2]: got "300.1.1.1"; 300.1.1.1 is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)',
    ]);
  });

  it('refuses a rate limit service port out of range (file and GatewayPolicy)', () => {
    const global = { service: { host: 'rls:99999' }, domain: 'd', descriptors: [{ entries: [{ name: 'k', expression: 'request.path' }], unit: 'Requests' }] };
    expect(problems(cfg([route({ policies: { traffic: { rateLimit: { global } } } })]))).toEqual([
      `${R}.policies.traffic.rateLimit.global.service.host: got "rls:99999"; port 99999 is out of range; expected a port from 1 to 65535`,
    ]);
    const r = compile(GatewayPolicySpec)({ targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'x' }], traffic: { rateLimit: { global } } });
    expect(r.ok ? [] : r.problems).toEqual([
      { path: 'traffic.rateLimit.global.service.host', message: 'got "rls:99999"; port 99999 is out of range; expected a port from 1 to 65535' },
    ]);
  });
});

describe('durations', () => {
  const timeouts = (t: Record<string, string>) => cfg([route({ timeouts: t })]);

  it('refuses a duration past 596h, the longest timer the proxy can set', () => {
    expect(problems(timeouts({ request: '597h' }))).toEqual([
      `${R}.timeouts.request: got "597h"; expected at most 596h (the longest timer the proxy can set); 0s means no timeout`,
    ]);
    expect(problems(timeouts({ request: '596h' }))).toEqual([]);
    expect(problems(timeouts({ backendRequest: '99999h' }))[0]).toMatch(/timeouts\.backendRequest: got "99999h"; expected at most 596h/);
    expect(problems(cfg([route()], {}, { config: { drainTimeout: '35791395m' } }))[0]).toMatch(/^config\.drainTimeout: got "35791395m"; expected a duration/);
    expect(problems(cfg([route()], {}, { config: { drainTimeout: '35791m' } }))[0]).toMatch(/^config\.drainTimeout: got "35791m"; expected at most 596h/);
  });

  it('0s is no timeout on routes and no default backend timeout; elsewhere it must be more than 0s', () => {
    expect(problems(timeouts({ request: '0s', backendRequest: '0s' }))).toEqual([]);
    expect(problems(cfg([route()], {}, { config: { backendRequestTimeout: '0s', drainTimeout: '0s', drainIdleTimeout: '0s' } }))).toEqual([]);
    expect(problems(cfg([route()], {}, { config: { connectTimeout: '0s' } }))).toEqual([
      'config.connectTimeout: got "0s"; expected more than 0s, a duration such as 500ms, 10s, 1m or 1h30m',
    ]);
    const global = { service: { host: 'rls:8081' }, domain: 'd', timeout: '0ms', descriptors: [{ entries: [{ name: 'k', expression: 'request.path' }], unit: 'Requests' }] };
    expect(problems(cfg([route({ policies: { traffic: { rateLimit: { global } } } })]))[0]).toMatch(/global\.timeout: got "0ms"; expected more than 0s/);
  });

  it('backendRequest must fit in request, unless request is 0s', () => {
    expect(problems(timeouts({ request: '1s', backendRequest: '2s' }))).toEqual([
      `${R}.timeouts.backendRequest: got "2s"; must not be longer than request (1s), which includes it`,
    ]);
    expect(problems(timeouts({ request: '0s', backendRequest: '2s' }))).toEqual([]);
    expect(problems(timeouts({ request: '2s', backendRequest: '2000ms' }))).toEqual([]);
  });

  it('keeps sub-second timeouts exact and turns a 0s request timeout into none', () => {
    const ir = (t: Record<string, string>) => standaloneToSnapshot(validateStandaloneConfig(timeouts(t)), { kind: 'file', path: '/x' }).binds[0]!.listeners[0]!.routes[0]!.timeouts;
    expect(ir({ request: '1s250ms', backendRequest: '250ms' })).toEqual({ requestMs: 1250, backendRequestMs: 250 });
    expect(ir({ request: '0s', backendRequest: '0s' })).toEqual({ requestMs: null, backendRequestMs: 0 });
    expect(ir({})).toEqual({ requestMs: null, backendRequestMs: null });
  });
});

describe('header values', () => {
  const withFilter = (filter: unknown) => cfg([route({ filters: [filter] })]);
  it('refuses CR, LF and other control characters in filter values, naming the field', () => {
    for (const value of ['a\r\nx-injected: 1', 'a\nb', 'a\rb', 'a\u0000b', 'a\u007fb', 'a\u0001']) {
      expect(problems(withFilter({ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-a', value }] } }))).toEqual([
        `${R}.filters[0].requestHeaderModifier.set[0].value: got ${JSON.stringify(value)}; expected a header value of visible characters, spaces and tabs (no CR, LF or other control characters)`,
      ]);
    }
    expect(problems(withFilter({ type: 'ResponseHeaderModifier', responseHeaderModifier: { add: [{ name: 'x-a', value: 'v\r\n' }] } }))[0]).toMatch(
      /filters\[0\]\.responseHeaderModifier\.add\[0\]\.value: got "v\\r\\n"; expected a header value/,
    );
  });

  it('refuses them in header matches too, and accepts tabs, spaces and Latin-1', () => {
    expect(problems(cfg([route({ matches: [{ headers: [{ name: 'x-a', value: 'a\r\nb' }] }] })]))[0]).toMatch(/matches\[0\]\.headers\[0\]\.value: got "a\\r\\nb"; expected a header value/);
    expect(problems(withFilter({ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-a', value: 'a b\tcafé' }] } }))).toEqual([]);
    expect(problems(withFilter({ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-a', value: '日本' }] } }))[0]).toMatch(/expected a header value/);
  });

  it('checkRouteRule refuses them too, for rules that did not come through the schema (HTTPRoutes)', () => {
    const out: Problem[] = [];
    checkRouteRule(
      {
        matches: [{ path: { type: 'Exact', value: '/a\nb' }, headers: [{ name: 'x-m', value: 'm\r\n' }] }],
        filters: [
          { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-a', value: 'ok' }], add: [{ name: 'x-b', value: 'v\r\nx-injected: 1' }] } },
          { type: 'ResponseHeaderModifier', responseHeaderModifier: { set: [{ name: 'x-c', value: 'v\u0000' }] } },
        ],
        backends: [{}],
      },
      'spec.rules[0]',
      DEFAULT_LIMITS,
      out,
    );
    expect(out.map((p) => p.path)).toEqual([
      'spec.rules[0].matches[0].path.value',
      'spec.rules[0].matches[0].headers[0].value',
      'spec.rules[0].filters[0].requestHeaderModifier.add[0].value',
      'spec.rules[0].filters[1].responseHeaderModifier.set[0].value',
    ]);
    expect(out[2]!.message).toBe('got "v\\r\\nx-injected: 1"; expected a header value of visible characters, spaces and tabs (no CR, LF or other control characters)');
  });

  it('refuses control characters in paths and path replacements', () => {
    expect(problems(cfg([route({ matches: [{ path: { type: 'Exact', value: '/a\r\nb' } }] })]))[0]).toMatch(/matches\[0\]\.path\.value: got "\/a\\r\\nb"; expected a path without control characters/);
    expect(
      problems(withFilter({ type: 'RequestRedirect', requestRedirect: { path: { type: 'ReplaceFullPath', replaceFullPath: '/x\r\nSet-Cookie: a=b' } } }))[0],
    ).toMatch(/requestRedirect\.path\.replaceFullPath: got .*; expected a path without control characters/);
  });
});

describe('regular expressions', () => {
  it('accepts RE2 syntax, including patterns that backtrack on other engines', () => {
    expect(problems(cfg([route({ matches: [{ path: { type: 'RegularExpression', value: '/(a+)+$' } }] })]))).toEqual([]);
    expect(problems(cfg([route({ matches: [{ path: { type: 'RegularExpression', value: '/v1/[a-z]+/\\d+' } }] })]))).toEqual([]);
  });

  it('refuses backreferences and lookaround, naming the field', () => {
    expect(problems(cfg([route({ matches: [{ path: { type: 'RegularExpression', value: '/(a)\\1' } }] })]))).toEqual([
      `${R}.matches[0].path.value: got "/(a)\\\\1": not a valid regular expression in RE2 syntax (error parsing regexp: invalid escape sequence: \`\\1\`); backreferences and lookaround are not supported`,
    ]);
    expect(problems(cfg([route({ matches: [{ headers: [{ type: 'RegularExpression', name: 'x-a', value: '(?=a)a' }] }] })]))[0]).toMatch(
      /matches\[0\]\.headers\[0\]\.value: got "\(\?=a\)a": not a valid regular expression in RE2 syntax/,
    );
    expect(problems(cfg([route({ matches: [{ queryParams: [{ type: 'RegularExpression', name: 'q', value: '(?<=a)b' }] }] })]))[0]).toMatch(
      /matches\[0\]\.queryParams\[0\]\.value: got .*: not a valid regular expression in RE2 syntax/,
    );
  });
});

describe('routes without backends and listeners without names', () => {
  const redirect = { type: 'RequestRedirect', requestRedirect: { hostname: 'example.org', statusCode: 301 } };
  it('a route with a RequestRedirect filter needs no backends (left out or empty)', () => {
    expect(problems(cfg([{ name: 'r', filters: [redirect] }]))).toEqual([]);
    expect(problems(cfg([{ name: 'r', filters: [redirect], backends: [] }]))).toEqual([]);
    const snap = standaloneToSnapshot(validateStandaloneConfig(cfg([{ name: 'r', filters: [redirect] }])), { kind: 'file', path: '/x' });
    expect(snap.binds[0]!.listeners[0]!.routes[0]!.backends).toEqual([]);
  });

  it('any other route needs one', () => {
    expect(problems(cfg([{ name: 'r' }]))).toEqual([`${R}.backends: is empty; add a backend { host: <host>:<port> }, a RequestRedirect filter or a directResponse policy`]);
    expect(problems(cfg([{ name: 'r', backends: [] }]))).toEqual([`${R}.backends: is empty; add a backend { host: <host>:<port> }, a RequestRedirect filter or a directResponse policy`]);
  });

  it('listeners without a name are named listener-<port>-<index>', () => {
    const config = { binds: [{ port: 3000, listeners: [{ protocol: 'HTTP', hostname: 'a.example.com', routes: [route()] }, { protocol: 'HTTP', routes: [route()] }] }, { port: 3001, listeners: [{ protocol: 'HTTP', routes: [route()] }] }] };
    expect(problems(config)).toEqual([]);
    const snap = standaloneToSnapshot(validateStandaloneConfig(config), { kind: 'file', path: '/x' });
    expect(snap.binds.map((b) => b.listeners.map((l) => l.name))).toEqual([['listener-3000-0', 'listener-3000-1'], ['listener-3001-0']]);
    expect(snap.binds[0]!.listeners[1]!.routes[0]!.name).toBe('listener-3000-1/r');
  });

  it('a name stays unique, default names included', () => {
    const config = { binds: [{ port: 3000, listeners: [{ protocol: 'HTTP', hostname: 'a.example.com', routes: [route()] }, { name: 'listener-3000-0', protocol: 'HTTP', routes: [route()] }] }] };
    expect(problems(config)).toEqual(['binds[0].listeners[1].name: duplicate listener name "listener-3000-0" (also at index 0); listener names must be unique']);
  });
});
