// Property tests: the compiled route index picks exactly what a brute-force reading of the
// Gateway API precedence rules picks, for random route sets and requests; and hostname
// intersection is sound and complete.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toMatches, type ProxySnapshot, type RouteIR, type HTTPRouteMatch } from '@tollgate/api';
import { compileSnapshot, selectRoute } from '../src/routing/compile.js';
import { standalonePickerDeps } from '../src/routing/backend-picker.js';
import { LimiterStore } from '../src/ratelimit/local/limiter.js';
import { systemClock } from '../src/ratelimit/clock.js';
import { effectiveHostnames, hostMatches, intersectHostname } from '../src/routing/hostname.js';

const PREFIXES = ['/', '/a', '/a/', '/a/b', '/ab', '/a/b/c'];
const EXACTS = ['/a', '/a/b', '/ab', '/'];
const REGEXES = ['/a/.*', '/[a-z]+'];
const HOSTNAMES = ['a.example.com', '*.example.com', 'b.a.example.com', '*.a.example.com'];
const REQ_PATHS = ['/', '/a', '/a/', '/a/b', '/a/b/c', '/ab', '/abc', '/a/bc'];
const REQ_HOSTS = ['a.example.com', 'b.a.example.com', 'c.example.com', 'other.com'];

const arbPath = fc.oneof(
  fc.constantFrom(...PREFIXES).map((value) => ({ type: 'PathPrefix' as const, value })),
  fc.constantFrom(...EXACTS).map((value) => ({ type: 'Exact' as const, value })),
  fc.constantFrom(...REGEXES).map((value) => ({ type: 'RegularExpression' as const, value })),
);
const arbMatch: fc.Arbitrary<HTTPRouteMatch> = fc.record(
  {
    path: arbPath,
    method: fc.constantFrom('GET', 'POST'),
    headers: fc.subarray([{ name: 'x-a', value: '1' }, { name: 'x-b', value: '2' }]),
    queryParams: fc.subarray([{ name: 'q', value: '1' }, { name: 'r', value: '2' }]),
  },
  { requiredKeys: ['path'] },
);
const arbRoutes = fc.array(
  fc.record({ hostnames: fc.subarray(HOSTNAMES), matches: fc.array(arbMatch, { minLength: 0, maxLength: 3 }) }),
  { minLength: 1, maxLength: 8 },
);
const arbRequest = fc.record({
  host: fc.constantFrom(...REQ_HOSTS),
  path: fc.constantFrom(...REQ_PATHS),
  method: fc.constantFrom('GET', 'POST'),
  headers: fc.subarray([['x-a', '1'], ['x-b', '2'], ['x-a', '9']] as const),
  query: fc.subarray(['q=1', 'r=2', 'q=3']),
});

function snapshotOf(routes: { hostnames: string[]; matches: HTTPRouteMatch[] }[]): ProxySnapshot {
  const irRoutes: RouteIR[] = routes.map((r, i) => ({
    name: `r${i}`,
    origin: { kind: 'config', path: `binds[0].listeners[0].routes[${i}]` },
    hostnames: r.hostnames,
    matches: toMatches(r.matches),
    filters: [],
    policy: null,
    backends: [],
    timeouts: { requestMs: null, backendRequestMs: null },
  }));
  return { version: 't', source: { kind: 'file', path: 't' }, binds: [{ port: 1, address: '127.0.0.1', listeners: [{ name: 'l', protocol: 'HTTP', hostname: null, policy: null, routes: irRoutes }] }] };
}

// The reference: every (route, match, hostname) that matches, ranked by the spec's keys.
function reference(snapshot: ProxySnapshot, req: { host: string; path: string; method: string; headers: Record<string, string>; query: string }): string | null {
  const params = new URLSearchParams(req.query);
  const routes = snapshot.binds[0]!.listeners[0]!.routes;
  let best: { key: number[]; name: string } | null = null;
  let order = 0;
  for (const r of routes) {
    for (const m of r.matches) {
      const myOrder = order++;
      for (const h of effectiveHostnames(null, r.hostnames)) {
        if (h !== null && !hostMatches(h, req.host)) continue;
        const p = m.path;
        const trimmed = p.value.replace(/\/+$/, '');
        const pathOk =
          p.type === 'Exact'
            ? req.path === p.value
            : p.type === 'RegularExpression'
              ? new RegExp(`^(?:${p.value})$`).test(req.path)
              : req.path === trimmed || req.path.startsWith(`${trimmed}/`) || trimmed === '';
        if (!pathOk) continue;
        if (m.method && m.method !== req.method) continue;
        if (!m.headers.every((x) => req.headers[x.name] === x.value)) continue;
        if (!m.queryParams.every((x) => params.get(x.name) === x.value)) continue;
        const hostRank = h === null ? [2, 0] : h.startsWith('*.') ? [1, -h.length] : [0, 0];
        const pathRank = p.type === 'Exact' ? [0, 0] : p.type === 'RegularExpression' ? [1, 0] : [2, -trimmed.length];
        const key = [...hostRank, ...pathRank, m.method ? 0 : 1, -m.headers.length, -m.queryParams.length, myOrder];
        if (!best || compareKeys(key, best.key) < 0) best = { key, name: r.name };
      }
    }
  }
  return best?.name ?? null;
}

function compareKeys(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

describe('route precedence (property)', () => {
  it('the compiled index agrees with the brute-force Gateway API ranking', () => {
    fc.assert(
      fc.property(arbRoutes, fc.array(arbRequest, { minLength: 1, maxLength: 10 }), (routes, requests) => {
        const snap = snapshotOf(routes);
        const compiled = compileSnapshot(snap);
        const listener = compiled.binds.get(1)!.listeners.first('x')!;
        for (const r of requests) {
          const headers = Object.fromEntries(r.headers);
          const query = r.query.join('&');
          const got = selectRoute(listener, r.host, { method: r.method, path: r.path, query, headers })?.route.ir.name ?? null;
          expect(got).toBe(reference(snap, { ...r, headers, query }));
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('compiling against the snapshot serving now (property)', () => {
  it('reuses the parts of the same route objects and selects exactly what a compile from scratch selects', () => {
    fc.assert(
      fc.property(arbRoutes, arbRoutes, fc.array(fc.nat(), { maxLength: 8 }), fc.array(arbRequest, { minLength: 1, maxLength: 10 }), (before, added, picks, requests) => {
        const first = snapshotOf(before);
        const old = first.binds[0]!.listeners[0]!.routes;
        // The next snapshot: some of the old route objects, in another order, and new ones.
        const fresh = snapshotOf([...before, ...added]).binds[0]!.listeners[0]!.routes.slice(before.length);
        const kept = [...new Set(picks.map((i) => old[i % old.length]!))];
        const routes = [...kept, ...fresh];
        const next: ProxySnapshot = { ...first, binds: [{ ...first.binds[0]!, listeners: [{ ...first.binds[0]!.listeners[0]!, routes }] }] };
        const previous = compileSnapshot(first);
        const reused = compileSnapshot(next, { limiters: new LimiterStore(systemClock, { maxKeys: 100 }), makeGlobal: null, picking: standalonePickerDeps(), previous });
        const scratch = compileSnapshot(next);
        for (const r of kept) expect(reused.parts.get(r)).toBe(previous.parts.get(r));
        for (const r of fresh) expect(previous.parts.has(r)).toBe(false);
        // Exactly the routes listed (the order of what is gathered follows the applies, not the list).
        expect(new Set(reused.parts.keys())).toEqual(new Set(routes));
        const pick = (c: typeof reused) => c.binds.get(1)!.listeners.first('x')!;
        for (const r of requests) {
          const headers = Object.fromEntries(r.headers);
          const req = { method: r.method, path: r.path, query: r.query.join('&'), headers };
          expect(selectRoute(pick(reused), r.host, req)?.route.ir.name ?? null).toBe(selectRoute(pick(scratch), r.host, req)?.route.ir.name ?? null);
          expect(selectRoute(pick(reused), r.host, req)?.route.ir.name ?? null).toBe(reference(next, { ...r, headers, query: req.query }));
        }
      }),
      { numRuns: 300 },
    );
  });
});

const label = fc.constantFrom('a', 'b', 'c');
const arbHost = fc.array(label, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.'));
const arbHostname = fc.oneof(arbHost, arbHost.map((h) => `*.${h}`));

describe('hostname intersection (property)', () => {
  it('is commutative', () => {
    fc.assert(fc.property(arbHostname, arbHostname, (a, b) => {
      expect(intersectHostname(a, b)).toBe(intersectHostname(b, a));
    }));
  });
  it('a host matches both hostnames exactly when it matches their intersection', () => {
    fc.assert(
      fc.property(arbHostname, arbHostname, arbHost, (a, b, host) => {
        const i = intersectHostname(a, b);
        const both = hostMatches(a, host) && hostMatches(b, host);
        expect(i !== null && hostMatches(i, host)).toBe(both);
      }),
      { numRuns: 2000 },
    );
  });
  it('a listener without hostname accepts every route hostname unchanged', () => {
    fc.assert(fc.property(arbHostname, (h) => {
      expect(intersectHostname(null, h)).toBe(h);
    }));
  });
  it('wildcards match one or more labels, never the bare suffix', () => {
    expect(hostMatches('*.example.com', 'a.example.com')).toBe(true);
    expect(hostMatches('*.example.com', 'a.b.example.com')).toBe(true);
    expect(hostMatches('*.example.com', 'example.com')).toBe(false);
    expect(intersectHostname('*.example.com', '*.a.example.com')).toBe('*.a.example.com');
    expect(intersectHostname('*.example.com', 'example.com')).toBe(null);
  });
});
