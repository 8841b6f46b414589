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

describe('keyed limits and windows', () => {
  const P = 'binds[0].listeners[0].routes[0].policies.traffic.rateLimit';
  const local = (...entries: unknown[]) => cfg([route({ policies: { traffic: { rateLimit: { local: entries } } } })]);
  const global = (...descriptors: unknown[]) => cfg([route({ policies: { traffic: { rateLimit: { global: { service: { host: '127.0.0.1:8081' }, domain: 'd', descriptors } } } } })]);

  it('refuses Months for a local limit, saying why; accepts it for a global override', () => {
    expect(problems(local({ requests: 1, unit: 'Months' }))).toEqual([
      `${P}.local[0].unit: Months is not available for a local limit: local counters live in each proxy's memory and start again at zero when it restarts, so a monthly budget would reset with every deploy; use Days, or a global limit (its counters live in the rate limit service)`,
    ]);
    expect(problems(local({ tokens: 1, unit: 'Days' }))).toEqual([]);
    expect(problems(global({ unit: 'Tokens', by: { type: 'Consumer' }, limit: { requestsPerUnit: 1_000_000, unit: 'Months' } }))).toEqual([]);
  });

  it('checks the fields each key type needs, naming them', () => {
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Header' } }))).toEqual([`${P}.local[0].by.name: required with type Header: the header whose value is the key`]);
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Header', name: 'x user' } }))).toEqual([
      `${P}.local[0].by.name: got "x user"; expected an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~)`,
    ]);
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Consumer', name: 'sub' } }))).toEqual([`${P}.local[0].by.name: not allowed with type Consumer; only Claim and Header keys name a claim or header`]);
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Expression' } }))).toEqual([`${P}.local[0].by.expression: required with type Expression, e.g. consumer.labels["tier"]`]);
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Claim', name: 'org', expression: 'x' } }))).toEqual([`${P}.local[0].by.expression: not allowed with type Claim; use type: Expression`]);
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Expression', expression: 'consumer.nope' } }))[0]).toMatch(/^.+\.local\[0\]\.by\.expression: got "consumer\.nope": does not type-check: consumer has no field 'nope'/);
    expect(problems(local({ requests: 1, unit: 'Hours', by: { type: 'Claim', name: 'https://example.com/tenant' } }))).toEqual([]);
    expect(problems(global({ unit: 'Requests' }))).toEqual([`${P}.global.descriptors[0]: has neither entries nor by; set entries, by (a key), or both`]);
    expect(problems(global({ unit: 'Tokens', by: { type: 'Claim' } }))).toEqual([`${P}.global.descriptors[0].by.name: required with type Claim: the claim whose value is the key`]);
    expect(problems(global({ unit: 'Requests', by: { type: 'Header', name: 'X-User' }, limit: { requestsPerUnit: 0, unit: 'Days' } }))[0]).toContain('requestsPerUnit: got 0; expected a number >= 1');
  });

  it("counts key expressions in the policy's CEL budget, with its descriptors'", () => {
    // 1796 each (the controller's policy-cel-budget golden): six fit in 10000, seven do not.
    const e = 'request.headers.exists(k, k.startsWith("x-tenant-"))';
    const keyed = (n: number) => Array.from({ length: n }, () => ({ requests: 1, unit: 'Hours', by: { type: 'Expression', expression: e } }));
    expect(problems(local(...keyed(5)))).toEqual([]);
    const both = cfg([
      route({
        policies: {
          traffic: {
            rateLimit: {
              local: keyed(5),
              global: { service: { host: '127.0.0.1:8081' }, domain: 'd', descriptors: [{ unit: 'Requests', entries: [{ name: 't', expression: e }, { name: 'u', expression: e }] }] },
            },
          },
        },
      }),
    ]);
    expect(problems(both)).toEqual([
      expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.traffic\.rateLimit: the expressions together have an estimated cost of 12572, more than the budget of 10000 \(cel\.maxCost\)/),
    ]);
  });

  it('converts keys and overrides to the IR: header names lower-cased, no key field on unkeyed entries', () => {
    const c = validateStandaloneConfig({
      binds: [
        {
          port: 1,
          listeners: [
            {
              name: 'l',
              protocol: 'HTTP',
              routes: [
                route({
                  policies: {
                    traffic: {
                      rateLimit: {
                        local: [{ requests: 1, unit: 'Days', by: { type: 'Header', name: 'X-Team' } }, { tokens: 5, unit: 'Hours' }],
                        global: { service: { host: '127.0.0.1:8081' }, domain: 'd', descriptors: [{ unit: 'Tokens', by: { type: 'Claim', name: 'org' }, limit: { requestsPerUnit: 9, unit: 'Months' } }] },
                      },
                    },
                  },
                }),
              ],
            },
          ],
        },
      ],
    });
    const policy = standaloneToSnapshot(c, { kind: 'file', path: 'x' }).binds[0]!.listeners[0]!.routes[0]!.policy!;
    expect(policy.localRateLimit).toEqual([
      { kind: 'requests', requests: 1, burst: 0, unit: 'Days', by: { type: 'Header', name: 'x-team' } },
      { kind: 'tokens', tokens: 5, unit: 'Hours' },
    ]);
    expect(policy.remoteRateLimit!.descriptors).toEqual([{ entries: [], unit: 'Tokens', by: { type: 'Claim', name: 'org' }, limit: { requestsPerUnit: 9, unit: 'Months' } }]);
  });
});
