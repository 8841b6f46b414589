// Standalone config validation and translation to the ProxySnapshot IR.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfigText, parseDuration, Secret, standaloneToSnapshot, validateStandaloneConfig } from '../src/index.js';
import { cfg, problems, route } from './support.js';

describe('validateStandaloneConfig', () => {
  it('accepts the minimal config of the interface spec', () => {
    expect(problems(cfg([route()]))).toEqual([]);
  });

  it('names path, value and expectation for every problem at once', () => {
    const out = problems({ config: { adminAddr: 'x' }, binds: [{ port: 0, listeners: [{ name: 'l', protocol: 'HTTP', routes: [route({ weight: 1 })] }] }] });
    expect(out).toEqual(
      expect.arrayContaining([
        'config.adminAddr: got "x"; expected <host>:<port>, e.g. 127.0.0.1:9000 or llm.internal:8080',
        'binds[0].port: got 0; expected a number >= 1',
        expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.routes\[0\]\.weight: unknown field; expected one of: name, hostnames, matches/),
      ]),
    );
  });

  it('applies the GatewayPolicy rules to file policies', () => {
    const local = (e: unknown) => cfg([route({ policies: { traffic: { rateLimit: { local: [e] } } } })]);
    expect(problems(local({ unit: 'Minutes' }))).toEqual([
      'binds[0].listeners[0].routes[0].policies.traffic.rateLimit.local[0]: sets neither requests nor tokens; exactly one of requests or tokens must be set',
    ]);
    expect(problems(local({ tokens: 5, burst: 1, unit: 'Minutes' }))[0]).toContain('burst is only allowed with requests');
    expect(problems(local({ requests: 0, unit: 'Minutes' }))[0]).toContain('requests: got 0; expected a number >= 1');
    const global = cfg([route({ policies: { traffic: { rateLimit: { global: { service: { backendRef: { name: 'rls', port: 8081 } }, domain: 'd', descriptors: [{ entries: [{ name: 'k', expression: 'request.path' }], unit: 'Requests' }] } } } } })]);
    expect(problems(global)[0]).toContain('a standalone proxy cannot resolve Services; use host: <host>:<port>');
  });

  it('rejects duplicate names and listener hostnames', () => {
    const dup = { binds: [{ port: 1, listeners: [{ name: 'a', protocol: 'HTTP', routes: [] }, { name: 'a', protocol: 'HTTP', routes: [] }] }] };
    expect(problems(dup)).toEqual(
      expect.arrayContaining([expect.stringContaining('binds[0].listeners[1].name: duplicate listener name "a"'), expect.stringContaining('binds[0].listeners[1].hostname: duplicate listener hostname on one port "*"')]),
    );
  });

  it('rejects ReplacePrefixMatch without a PathPrefix match, and redirect with rewrite', () => {
    expect(problems(cfg([route({ matches: [{ path: { type: 'Exact', value: '/a' } }], filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/b' } } }] })]))[0]).toContain(
      'ReplacePrefixMatch needs every match of the route to be a PathPrefix path match',
    );
    const both = problems(cfg([route({ filters: [{ type: 'URLRewrite', urlRewrite: {} }, { type: 'RequestRedirect', requestRedirect: {} }] })]));
    expect(both).toContain('binds[0].listeners[0].routes[0].filters: RequestRedirect and URLRewrite cannot be used together');
  });
});

describe('parseConfigText', () => {
  it('rejects duplicate keys with the line', () => {
    expect(() => parseConfigText('binds: []\nbinds: []\n', 'f.yaml')).toThrow(/Map keys must be unique at line 2/);
  });
  it('reads JSON as well', () => {
    expect(parseConfigText('{"binds": []}', 'f.json')).toEqual({ binds: [] });
  });
});

describe('standaloneToSnapshot', () => {
  it('normalises defaults, lower-cases header names and wraps credentials', () => {
    const snap = standaloneToSnapshot(
      validateStandaloneConfig(
        cfg([
          route({
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'Authorization', value: 'Bearer sk-123' }, { name: 'X-A', value: 'v' }] } }],
            policies: { traffic: { rateLimit: { local: [{ requests: 5, unit: 'Seconds' }, { tokens: 100, unit: 'Hours' }] } } },
            timeouts: { request: '1m30s' },
          }),
        ]),
      ),
      { kind: 'file', path: '/x' },
    );
    const r = snap.binds[0]!.listeners[0]!.routes[0]!;
    expect(r.name).toBe('l/r');
    expect(r.matches).toEqual([{ path: { type: 'PathPrefix', value: '/' }, method: null, headers: [], queryParams: [] }]);
    expect(r.policy?.localRateLimit).toEqual([
      { kind: 'requests', requests: 5, burst: 0, unit: 'Seconds' },
      { kind: 'tokens', tokens: 100, unit: 'Hours' },
    ]);
    expect(r.timeouts).toEqual({ requestMs: 90_000, backendRequestMs: null });
    const f = r.filters[0]!;
    if (f.type !== 'RequestHeaderModifier') throw new Error('unexpected filter');
    expect(f.set[0]!.name).toBe('authorization');
    expect(f.set[0]!.value).toBeInstanceOf(Secret);
    expect(JSON.stringify(snap)).not.toContain('sk-123');
    expect(inspect(snap, { depth: 20 })).not.toContain('sk-123');
    expect(f.set[1]!.value).toBe('v');
  });
  it('the version changes with the content', () => {
    const a = standaloneToSnapshot(validateStandaloneConfig(cfg([route()])), { kind: 'file', path: '/x' });
    const b = standaloneToSnapshot(validateStandaloneConfig(cfg([route({ name: 'other' })])), { kind: 'file', path: '/x' });
    expect(a.version).not.toBe(b.version);
  });
});

describe('parseDuration', () => {
  it('reads Gateway API durations', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(() => parseDuration('5 s')).toThrow(/expected a duration/);
  });
});

describe('global descriptor expressions', () => {
  it('must parse as CEL', () => {
    const withExpr = (expression: string) =>
      cfg([route({ policies: { traffic: { rateLimit: { global: { service: { host: '127.0.0.1:8081' }, domain: 'd', descriptors: [{ entries: [{ name: 'user', expression }], unit: 'Requests' }] } } } } })]);
    expect(problems(withExpr('request.headers["x-user"]'))).toEqual([]);
    expect(problems(withExpr('request.headers["x-user"'))[0]).toMatch(
      /^binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.traffic\.rateLimit\.global\.descriptors\[0\]\.entries\[0\]\.expression: got "request\.headers\[\\"x-user\\"": not a valid CEL expression/,
    );
  });
});
