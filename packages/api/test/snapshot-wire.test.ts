// The ProxySnapshot on the wire: secrets travel, dumps still redact, the version is a content
// hash, and a received snapshot is validated field by field.
import { describe, expect, it } from 'vitest';
import {
  NO_AUTH,
  NO_TRAFFIC_KINDS,
  decodeSnapshot,
  encodeSnapshot,
  fromWire,
  REDACTED,
  Secret,
  encodeSnapshotDelta,
  encodeSnapshotParts,
  routePositions,
  endpointPositions,
  DeltaMismatchError,
  SnapshotDecoder,
  snapshotProblems,
  snapshotVersion,
  standaloneToSnapshot,
  toWire,
  validateStandaloneConfig,
  ValidationError,
  withVersion,
  resolveLimits,
  encodeSnapshotDelta as delta,
  type EvaluationLimits,
  type ProxySnapshot,
} from '../src/index.js';

function sample(token = 'sk-live-123'): ProxySnapshot {
  return withVersion({
    source: { kind: 'controller', gateway: 'default/gw' },
    binds: [
      {
        port: 8080,
        address: '0.0.0.0',
        listeners: [
          {
            name: 'default/gw/http',
            protocol: 'HTTP',
            hostname: null,
            policy: {
              origin: { kind: 'GatewayPolicy', namespace: 'default', name: 'p', target: { kind: 'Gateway', namespace: 'default', name: 'gw', sectionName: null } },
              localRateLimit: [{ kind: 'requests', requests: 10, burst: 0, unit: 'Minutes' }],
              remoteRateLimit: null,
              transformation: null,
              ...NO_AUTH,
              ...NO_TRAFFIC_KINDS,
              extProc: { service: 'ext-proc.default.svc.cluster.local:9002', requestHeaderMode: 'SEND', responseHeaderMode: 'SKIP', requestBodyMode: 'BUFFERED', responseBodyMode: 'STREAMED', maxBufferedBytes: 65536, messageTimeoutMs: 200, failureMode: 'FailOpen' },
            },
            routes: [
              {
                name: 'default/chat/rule/0',
                origin: { kind: 'HTTPRoute', namespace: 'default', name: 'chat', rule: 0 },
                hostnames: [],
                matches: [{ path: { type: 'PathPrefix', value: '/' }, method: null, headers: [], queryParams: [] }],
                filters: [{ type: 'RequestHeaderModifier', set: [{ name: 'authorization', value: new Secret(`Bearer ${token}`) }], add: [], remove: [] }],
                policy: null,
                backends: [
                  { kind: 'service', name: 'llm.default.svc.cluster.local:80', namespace: 'default', service: 'llm', port: 80, weight: 1 },
                  { kind: 'invalid', name: 'default/missing', weight: 1, reason: 'BackendNotFound' },
                ],
                timeouts: { requestMs: null, backendRequestMs: 5000 },
              },
            ],
          },
        ],
      },
    ],
    endpoints: [{ name: 'llm.default.svc.cluster.local:80', endpoints: [{ address: '198.18.0.7', port: 9000 }] }],
  });
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

describe('snapshot wire encoding', () => {
  it('carries secrets on the wire while JSON.stringify of the snapshot still redacts them', () => {
    const snap = sample();
    expect(JSON.stringify(snap)).not.toContain('sk-live-123');
    expect(JSON.stringify(snap)).toContain(REDACTED);
    const text = encodeSnapshot(snap);
    expect(text).toContain('"secret":"Bearer sk-live-123"');
    const back = decodeSnapshot(text);
    const header = back.binds[0]!.listeners[0]!.routes[0]!.filters[0]!;
    if (header.type !== 'RequestHeaderModifier') throw new Error('filter type changed');
    const value = header.set[0]!.value;
    expect(value).toBeInstanceOf(Secret);
    expect((value as Secret).reveal()).toBe('Bearer sk-live-123');
    expect(toWire(back)).toEqual(toWire(snap));
    expect(back.version).toBe(snap.version);
  });

  it('round-trips a standalone snapshot', () => {
    const cfg = validateStandaloneConfig({
      binds: [{ port: 3000, listeners: [{ name: 'l', protocol: 'HTTP', routes: [{ name: 'r', backends: [{ host: '127.0.0.1:9000', weight: 2 }] }] }] }],
    });
    const snap = standaloneToSnapshot(cfg, { kind: 'file', path: '/etc/tollgate.yaml' });
    expect(toWire(decodeSnapshot(encodeSnapshot(snap)))).toEqual(toWire(snap));
  });
});

describe('snapshot version', () => {
  it('is equal for equal content, survives the wire, and is 12 hex digits', () => {
    const snap = sample();
    expect(snapshotVersion(sample())).toBe(snap.version);
    expect(decodeSnapshot(encodeSnapshot(snap)).version).toBe(snap.version);
    expect(snapshotVersion(decodeSnapshot(encodeSnapshot(snap)))).toBe(snap.version);
    expect(snap.version).toMatch(/^[0-9a-f]{12}$/);
  });

  it('changes with a secret of a Gateway-level policy (a user\'s password hash rotated in its htpasswd)', () => {
    const withUser = (hash: string): ProxySnapshot => {
      const base = sample();
      const listener = base.binds[0]!.listeners[0]!;
      const basicAuth = { realm: 'r', origin: 'Secret default/users key htpasswd', users: [{ user: 'bob', scheme: 'bcrypt' as const, hash: new Secret(hash) }] };
      return withVersion({ source: base.source, binds: [{ ...base.binds[0]!, listeners: [{ ...listener, policy: { ...listener.policy!, basicAuth } }] }] });
    };
    const before = withUser('$2y$05$UoN.uiu24LIFj9tiYO5WzOYkW4516R/9BVBvZ5LwkU11byXUSofqC');
    const after = withUser('$2y$05$0000000000000000000000uXyTvqtsD3ewJ3BKW0UXqOmF9PCDC.');
    expect(after.version).not.toBe(before.version);
    expect(snapshotVersion(decodeSnapshot(encodeSnapshot(after)))).toBe(after.version);
  });

  it('of a large endpoints table is the same hashed from the previous snapshot or alone, across entries changed, added and removed', () => {
    const entry = (i: number, port = 9000) => ({ name: `svc-${String(i).padStart(4, '0')}.ns.svc.cluster.local:80`, endpoints: [{ address: `198.18.${i >> 8}.${i & 255}`, port }] });
    // No Secret in it: the fresh copy below goes through JSON, which redacts them.
    const base = { source: sample().source, binds: [] };
    let previous = withVersion({ ...base, endpoints: Array.from({ length: 300 }, (_, i) => entry(i)) });
    const steps: ((t: ReturnType<typeof entry>[]) => ReturnType<typeof entry>[])[] = [
      (t) => t.map((e, i) => (i === 150 ? entry(150, 9001) : e)),
      (t) => [entry(-1), ...t],
      (t) => t.slice(0, 299),
      (t) => t.map((e, i) => (i === 0 || i === 298 ? { ...e, endpoints: [] } : e)),
      (t) => t,
    ];
    for (const step of steps) {
      const endpoints = step([...previous.endpoints!] as ReturnType<typeof entry>[]);
      const next = withVersion({ ...base, endpoints }, previous);
      // Fresh objects: nothing kept from any earlier hash.
      expect(next.version).toBe(snapshotVersion(JSON.parse(JSON.stringify({ ...base, endpoints })) as ProxySnapshot));
      expect(next.version === previous.version).toBe(JSON.stringify(endpoints) === JSON.stringify(previous.endpoints));
      previous = next;
    }
  });

  it('changes with any content, secrets included', () => {
    expect(sample('a').version).not.toBe(sample('b').version);
    const other = withVersion({ ...sample(), source: { kind: 'controller', gateway: 'default/other' } });
    expect(other.version).not.toBe(sample().version);
  });
});

describe('fromWire validation', () => {
  const wire = () => toWire(sample()) as unknown as Record<string, unknown> & { binds: Record<string, unknown>[] };

  it('names an unknown field and a wrong type by path', () => {
    const w = wire();
    (w.binds[0] as { listeners: Record<string, unknown>[] }).listeners[0]!.extra = 1;
    w.binds[0]!.port = 'x';
    expect(problemsOf(() => fromWire(w))).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.extra: unknown field/),
        'binds[0].port: got string "x"; expected integer',
      ]),
    );
  });

  it('refuses a version that is not the hash of the content', () => {
    const w = wire();
    w.version = '000000000000';
    expect(problemsOf(() => fromWire(w))).toEqual([`version: got "000000000000"; the content hashes to "${sample().version}"`]);
  });

  it('refuses two binds on one port and a regular expression RE2 cannot run (lookahead)', () => {
    const snap = sample();
    const bind = snap.binds[0]!;
    const route = bind.listeners[0]!.routes[0]!;
    const bad = withVersion({
      source: snap.source,
      binds: [
        bind,
        {
          ...bind,
          listeners: [{ ...bind.listeners[0]!, name: 'other', routes: [{ ...route, matches: [{ path: { type: 'RegularExpression', value: '/a(?=b)' }, method: null, headers: [], queryParams: [] }] }] }],
        },
      ],
    });
    expect(problemsOf(() => fromWire(toWire(bad)))).toEqual([
      'binds[1].port: port 8080 is bound twice; one bind per port',
      expect.stringMatching(/^binds\[1\]\.listeners\[0\]\.routes\[0\]\.matches\[0\]\.path\.value: got "\/a\(\?=b\)": not a valid regular expression in RE2 syntax/),
    ]);
  });

  it('refuses protocol h2 without tls and h2c with tls, on a backend and a mirror, by path', () => {
    const snap = sample();
    const bind = snap.binds[0]!;
    const route = bind.listeners[0]!.routes[0]!;
    const tls = { caCertificates: null, hostname: 'grpc.internal', subjectAltNames: [], clientCertificate: null, minVersion: 'TLSv1.2' } as const;
    const service = route.backends[0]!;
    if (service.kind !== 'service') throw new Error('sample changed');
    const withBackends = (backends: ProxySnapshot['binds'][number]['listeners'][number]['routes'][number]['backends'], mirror = backends[0]!) =>
      withVersion({ source: snap.source, binds: [{ ...bind, listeners: [{ ...bind.listeners[0]!, routes: [{ ...route, backends, filters: [{ type: 'RequestMirror', backend: mirror, numerator: 1, denominator: 1 }] }] }] }] });
    const at = 'binds[0].listeners[0].routes[0]';
    expect(problemsOf(() => fromWire(toWire(withBackends([{ ...service, protocol: 'h2' }, { ...service, protocol: 'h2c', tls }]))))).toEqual([
      `${at}.backends[0].protocol: h2 is HTTP/2 over TLS and needs tls; add tls, or use h2c for HTTP/2 over cleartext`,
      `${at}.backends[1].protocol: h2c is HTTP/2 over cleartext and cannot go with tls; use h2 for HTTP/2 over TLS`,
      `${at}.filters[0].backend.protocol: h2 is HTTP/2 over TLS and needs tls; add tls, or use h2c for HTTP/2 over cleartext`,
    ]);
    const good = withBackends([{ ...service, protocol: 'h2', tls }, { ...service, protocol: 'h2c' }]);
    expect(toWire(fromWire(toWire(good)))).toEqual(toWire(good));
  });

  it('refuses a secret in any shape but { secret }', () => {
    const w = wire();
    const text = JSON.stringify(w).replace('{"secret":"Bearer sk-live-123"}', '{"secret":"x","extra":1}');
    expect(problemsOf(() => decodeSnapshot(text)).length).toBeGreaterThan(0);
    expect(problemsOf(() => decodeSnapshot('{'))).toEqual([expect.stringMatching(/^: not JSON/)]);
  });
});

describe('successive snapshots: only new routes are checked', () => {
  /** sample() with a second route whose path prefix is `second`. */
  function twoRoutes(second: string): ProxySnapshot {
    const snap = sample();
    const listener = snap.binds[0]!.listeners[0]!;
    const first = listener.routes[0]!;
    const other = { ...first, name: 'default/other/rule/0', matches: [{ path: { type: 'PathPrefix' as const, value: second }, method: null, headers: [], queryParams: [] }] };
    return withVersion({ source: snap.source, binds: [{ ...snap.binds[0]!, listeners: [{ ...listener, routes: [first, other] }] }], endpoints: snap.endpoints });
  }
  const routesOf = (s: ProxySnapshot) => s.binds[0]!.listeners[0]!.routes;

  it('the encoding is the wire form, routes included', () => {
    const snap = twoRoutes('/b');
    expect(JSON.parse(encodeSnapshot(snap))).toEqual(toWire(snap));
  });

  it('a decoder takes an unchanged route as it decoded it before and decodes a changed one', () => {
    const decoder = new SnapshotDecoder();
    const a = decoder.decode(encodeSnapshot(twoRoutes('/b')));
    const b = decoder.decode(encodeSnapshot(twoRoutes('/c')));
    expect(routesOf(b)[0]).toBe(routesOf(a)[0]);
    expect(routesOf(b)[1]).not.toBe(routesOf(a)[1]);
    expect(toWire(b)).toEqual(toWire(twoRoutes('/c')));
    expect(b.version).toBe(twoRoutes('/c').version);
  });

  it('a decoder refuses a bad new route beside known ones, by path, and keeps the routes of its last good snapshot', () => {
    const decoder = new SnapshotDecoder();
    const a = decoder.decode(encodeSnapshot(twoRoutes('/b')));
    const bad = toWire(twoRoutes('/c')) as unknown as { binds: { listeners: { routes: Record<string, unknown>[] }[] }[] };
    bad.binds[0]!.listeners[0]!.routes[1]!.matches = [];
    expect(problemsOf(() => decoder.decode(JSON.stringify(bad)))).toEqual([expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.routes\[1\]\.matches: /)]);
    // The same text with a wrong version: the known route passes, the version does not.
    const tampered = JSON.stringify(toWire(twoRoutes('/b'))).replace('"/b"', '"/x"');
    expect(problemsOf(() => decoder.decode(tampered))).toEqual([expect.stringMatching(/^version: got /)]);
    const c = decoder.decode(encodeSnapshot(twoRoutes('/d')));
    expect(routesOf(c)[0]).toBe(routesOf(a)[0]);
  });

  it('the builder check reports a bad route by path, found again when offered again', () => {
    expect(snapshotProblems(twoRoutes('/b'))).toEqual([]);
    const good = twoRoutes('/b');
    const listener = good.binds[0]!.listeners[0]!;
    const lookahead = { ...listener.routes[1]!, matches: [{ path: { type: 'RegularExpression' as const, value: '/a(?=b)' }, method: null, headers: [], queryParams: [] }] };
    const bad = withVersion({ source: good.source, binds: [{ ...good.binds[0]!, listeners: [{ ...listener, routes: [listener.routes[0]!, lookahead] }] }] });
    const expected = ['binds[0].listeners[0].routes[1].matches[0].path.value: not a valid regular expression in RE2 syntax'];
    const found = () => snapshotProblems(bad).map((p) => `${p.path}: ${p.message.replace(/^got "[^"]*": /, '').replace(/ \(.*$/, '')}`);
    expect(found()).toEqual(expected);
    expect(found()).toEqual(expected);
    expect(snapshotProblems({ ...good, version: '000000000000' })).toEqual([{ path: 'version', message: `got "000000000000"; the content hashes to "${good.version}"` }]);
  });

  it('the builder check, given the snapshot before, finds a bad route put between the ends a list shares with its list', () => {
    const good = sample();
    const listener = good.binds[0]!.listeners[0]!;
    const route = listener.routes[0]!;
    const at = (i: number, value = `/r${i}`) => ({ ...route, name: `default/r${i}/rule/0`, matches: [{ path: { type: value.startsWith('/a(') ? ('RegularExpression' as const) : ('PathPrefix' as const), value }, method: null, headers: [], queryParams: [] }] });
    const valid = Array.from({ length: 6 }, (_, i) => at(i));
    const snap = (routes: typeof valid) => withVersion({ source: good.source, binds: [{ ...good.binds[0]!, listeners: [{ ...listener, routes }] }] });
    const before = snap(valid);
    expect(snapshotProblems(before)).toEqual([]);
    const lookahead = at(9, '/a(?=b)');
    const bad = snap([...valid.slice(0, 3), lookahead, ...valid.slice(3)]);
    const expected = ['binds[0].listeners[0].routes[3].matches[0].path.value'];
    expect(snapshotProblems(bad, before).map((p) => p.path)).toEqual(expected);
    // The same list offered again (not found valid, so walked again), and against itself.
    expect(snapshotProblems(bad, before).map((p) => p.path)).toEqual(expected);
    expect(snapshotProblems(bad, bad).map((p) => p.path)).toEqual(expected);
    // A bad route that replaced a good one, at the end; and a good list after it.
    const last = snap([...valid.slice(0, 5), lookahead]);
    expect(snapshotProblems(last, before).map((p) => p.path)).toEqual(['binds[0].listeners[0].routes[5].matches[0].path.value']);
    expect(snapshotProblems(snap([...valid, at(7)]), before)).toEqual([]);
  });

  it('in parts (the stream): each route as its own text; a decoder parses only the texts it does not have', () => {
    const decoder = new SnapshotDecoder();
    const partsA = encodeSnapshotParts(twoRoutes('/b'));
    expect(partsA.routeCounts).toEqual([2]);
    expect((JSON.parse(partsA.skeleton) as { binds: { listeners: { routes: unknown[] }[] }[] }).binds[0]!.listeners[0]!.routes).toEqual([]);
    const a = decoder.decodeParts(partsA);
    expect(toWire(a)).toEqual(toWire(twoRoutes('/b')));
    const b = decoder.decodeParts(encodeSnapshotParts(twoRoutes('/c')));
    expect(routesOf(b)[0]).toBe(routesOf(a)[0]);
    expect(b.version).toBe(twoRoutes('/c').version);
    // The whole text in the skeleton's place (no routes, no counts) is decoded as a whole.
    expect(decoder.decodeParts({ skeleton: encodeSnapshot(twoRoutes('/d')), routes: [], routeCounts: [] }).version).toBe(twoRoutes('/d').version);
  });

  it('in parts: counts that do not fit the listeners and a route that is not JSON are refused by path', () => {
    const parts = encodeSnapshotParts(twoRoutes('/b'));
    expect(problemsOf(() => new SnapshotDecoder().decodeParts({ ...parts, routeCounts: [1] }))).toEqual([expect.stringMatching(/^routeCounts: got 1 listener counts adding up to 1 for 1 listeners and 2 routes/)]);
    expect(problemsOf(() => new SnapshotDecoder().decodeParts({ ...parts, routes: [parts.routes[0]!, '{'] }))).toEqual([expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.routes\[1\]: not JSON/)]);
  });

  describe('deltas: routes the receiver holds are sent as their positions in its snapshot', () => {
    /** v1 = twoRoutes('/b'); v2 keeps v1's first route object and replaces the second. */
    function pair() {
      const v1 = twoRoutes('/b');
      const listener = v1.binds[0]!.listeners[0]!;
      const changed = { ...routesOf(v1)[1]!, matches: [{ path: { type: 'PathPrefix' as const, value: '/c' }, method: null, headers: [], queryParams: [] }] };
      const v2 = withVersion({ source: v1.source, binds: [{ ...v1.binds[0]!, listeners: [{ ...listener, routes: [routesOf(v1)[0]!, changed] }] }], endpoints: v1.endpoints });
      const delta = encodeSnapshotDelta(v2, { version: v1.version, positions: routePositions(v1), entries: endpointPositions(v1) });
      return { v1, v2, delta };
    }

    it('carries only the new route texts and decodes to the same snapshot, unchanged routes being the objects held', () => {
      const { v1, v2, delta } = pair();
      // The Service endpoints are the base's: named by position, no text.
      expect(delta.base).toEqual({ version: v1.version, refs: [1, 0], endpointRefs: [1] });
      expect(delta.endpoints).toEqual([]);
      expect(delta.routes).toHaveLength(1);
      const decoder = new SnapshotDecoder();
      const a = decoder.decodeParts(encodeSnapshotParts(v1));
      expect(decoder.version).toBe(v1.version);
      const b = decoder.decodeParts(delta);
      expect(toWire(b)).toEqual(toWire(v2));
      expect(b.version).toBe(v2.version);
      expect(routesOf(b)[0]).toBe(routesOf(a)[0]);
      expect(decoder.version).toBe(v2.version);
    });

    it('refuses a delta against a version it does not hold, a position out of range and texts that do not fit the refs, keeping what it holds', () => {
      const { v1, delta } = pair();
      expect(problemsOf(() => new SnapshotDecoder().decodeParts(delta))).toEqual([`baseVersion: got "${v1.version}"; this proxy holds no snapshot yet: send the full snapshot`]);
      const decoder = new SnapshotDecoder();
      decoder.decodeParts(encodeSnapshotParts(v1));
      const base = delta.base!;
      expect(problemsOf(() => decoder.decodeParts({ ...delta, base: { ...base, refs: [3, 0] } }))).toEqual([
        `routeRefs[0]: got 3; the base snapshot ${v1.version} has 2 routes (refs are 1 to 2, or 0 for a route sent as text)`,
      ]);
      expect(problemsOf(() => decoder.decodeParts({ ...delta, base: { ...base, refs: [1, 1] } }))).toEqual(['routes: got 1 route texts for 0 refs of 0; expected one text per new route']);
      expect(problemsOf(() => decoder.decodeParts({ ...delta, base: { ...base, refs: [1] }, routes: [] }))).toEqual([
        expect.stringMatching(/^routeCounts: got 1 listener counts adding up to 2 for 1 listeners and 1 route refs/),
      ]);
      expect(problemsOf(() => decoder.decodeParts({ ...delta, routes: ['{'] }))).toEqual([expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.routes\[1\]: not JSON/)]);
      // None of the refusals changed what the decoder holds: the good delta still applies.
      expect(decoder.version).toBe(v1.version);
      expect(decoder.decodeParts(delta).version).toBe(pair().v2.version);
    });

    it('an endpoint change is the table alone: no route text, the routes the objects held, a new version', () => {
      const v1 = sample();
      const endpoints = [{ name: 'llm.default.svc.cluster.local:80', endpoints: [{ address: '198.18.0.7', port: 9000 }, { address: '198.18.0.8', port: 9000 }] }];
      const v2 = withVersion({ ...v1, endpoints }, v1);
      expect(v2.version).not.toBe(v1.version);
      expect(v2.version).toBe(snapshotVersion({ ...v1, endpoints }));
      const delta = encodeSnapshotDelta(v2, { version: v1.version, positions: routePositions(v1), entries: endpointPositions(v1) });
      expect(delta.routes).toEqual([]);
      expect(delta.endpoints).toEqual([JSON.stringify(endpoints[0])]);
      expect(delta.base?.endpointRefs).toEqual([0]);
      // The skeleton carries neither routes nor endpoints.
      expect(delta.skeleton).not.toContain('198.18.0.7');
      const decoder = new SnapshotDecoder();
      const a = decoder.decodeParts(encodeSnapshotParts(v1));
      const b = decoder.decodeParts(delta);
      expect(b.endpoints).toEqual(endpoints);
      expect(routesOf(b)).toEqual(routesOf(a));
      routesOf(b).forEach((r, i) => expect(r).toBe(routesOf(a)[i]));
      // The listener's policy is the object decoded before, too (a proxy keeps its compiled routes while it is),
      // and so is its route list: a proxy takes a listener whose list is the same array whole.
      expect(b.binds[0]!.listeners[0]!.policy).toBe(a.binds[0]!.listeners[0]!.policy);
      expect(b.binds[0]!.listeners[0]!.routes).toBe(a.binds[0]!.listeners[0]!.routes);
      expect(toWire(decodeSnapshot(encodeSnapshot(v2)))).toEqual(toWire(v2));
    });

    it('a route list that changed is a new array, the lists of other listeners the arrays they were', () => {
      const v1 = sample();
      const bind = v1.binds[0]!;
      const first = bind.listeners[0]!;
      const second = { ...first, name: 'second', hostname: 'second.example.com' };
      const two = withVersion({ ...v1, binds: [{ ...bind, listeners: [first, second] }] }, v1);
      const decoder = new SnapshotDecoder();
      const a = decoder.decodeParts(encodeSnapshotParts(two));
      const listOf = (s: ProxySnapshot, i: number) => s.binds[0]!.listeners[i]!.routes;
      // The second listener loses its last route.
      const v2 = withVersion({ ...two, binds: [{ ...bind, listeners: [first, { ...second, routes: second.routes.slice(0, -1) }] }] }, two);
      const b = decoder.decodeParts(encodeSnapshotDelta(v2, { version: two.version, positions: routePositions(two), entries: endpointPositions(two) }));
      expect(listOf(b, 0)).toBe(listOf(a, 0));
      expect(listOf(b, 1)).not.toBe(listOf(a, 1));
      expect(listOf(b, 1)).toEqual(listOf(a, 1).slice(0, -1));
      expect(toWire(b)).toEqual(toWire(v2));
      // Refused by the receiver: the decoder holds the lists before again.
      decoder.rollback();
      const c = decoder.decodeParts(encodeSnapshotDelta(v2, { version: two.version, positions: routePositions(two), entries: endpointPositions(two) }));
      expect(listOf(c, 0)).toBe(listOf(a, 0));
    });

    it("a listener's policy that changed is decoded anew; rollback() holds the one before again", () => {
      const v1 = sample();
      const listener = v1.binds[0]!.listeners[0]!;
      const policyOf = (s: ProxySnapshot) => s.binds[0]!.listeners[0]!.policy!;
      const withRequests = (n: number, base: ProxySnapshot) =>
        withVersion({ ...base, binds: [{ ...base.binds[0]!, listeners: [{ ...listener, policy: { ...listener.policy!, localRateLimit: [{ kind: 'requests', requests: n, burst: 0, unit: 'Minutes' }] } }] }] }, base);
      const decoder = new SnapshotDecoder();
      const a = decoder.decodeParts(encodeSnapshotParts(v1));
      const v2 = withRequests(20, v1);
      const b = decoder.decodeParts(encodeSnapshotDelta(v2, { version: v1.version, positions: routePositions(v1), entries: endpointPositions(v1) }));
      expect(policyOf(b)).not.toBe(policyOf(a));
      expect(policyOf(b).localRateLimit).toEqual([{ kind: 'requests', requests: 20, burst: 0, unit: 'Minutes' }]);
      expect(toWire(b)).toEqual(toWire(v2));
      // Back to the first policy's content: an equal object is the one the decoder holds, once it holds it.
      decoder.rollback();
      const c = decoder.decodeParts(encodeSnapshotParts(v1));
      expect(policyOf(c)).toBe(policyOf(a));
    });

    it('an empty endpoints table is the same content as none', () => {
      const { endpoints: _, ...rest } = sample();
      const none = withVersion(rest);
      expect(withVersion({ ...rest, endpoints: [] }).version).toBe(none.version);
      expect(snapshotVersion({ ...rest, endpoints: [] })).toBe(none.version);
      expect(decodeSnapshot(encodeSnapshot({ ...none, endpoints: [] })).version).toBe(none.version);
    });

    it('refuses an endpoint ref past the base\'s entries (send in full), a bad entry text and entries that do not fit the refs, by path', () => {
      const v1 = sample();
      const decoder = new SnapshotDecoder();
      decoder.decodeParts(encodeSnapshotParts(v1));
      const endpoints = [{ name: 'llm.default.svc.cluster.local:80', endpoints: [{ address: '198.18.0.8', port: 9000 }] }];
      const delta = encodeSnapshotDelta(withVersion({ ...v1, endpoints }, v1), { version: v1.version, positions: routePositions(v1), entries: endpointPositions(v1) });
      const base = delta.base!;
      expect(() => decoder.decodeParts({ ...delta, endpoints: [], base: { ...base, endpointRefs: [2] } })).toThrow(DeltaMismatchError);
      expect(problemsOf(() => decoder.decodeParts({ ...delta, endpoints: [], base: { ...base, endpointRefs: [2] } }))).toEqual([
        `endpointRefs[0]: got 2; the base snapshot ${v1.version} has 1 endpoint entries (refs are 1 to 1, or 0 for an entry sent as text)`,
      ]);
      expect(problemsOf(() => decoder.decodeParts({ ...delta, endpoints: ['{"name":"x","endpoints":[{"address":"198.18.0.8"}]}'] }))).toEqual([
        expect.stringMatching(/^endpoints\[0\]\.endpoints\[0\]\.port: required field is missing/),
      ]);
      expect(problemsOf(() => decoder.decodeParts({ ...delta, endpoints: [] }))).toEqual(['endpoints: got 0 entry texts for 1 endpoint refs of 0; expected one text per new entry']);
      expect(decoder.decodeParts(delta).endpoints).toEqual(endpoints);
    });

    it('refuses a Service port listed twice in the endpoints, by path', () => {
      const w = toWire(sample()) as unknown as { endpoints: unknown[] };
      w.endpoints = [...w.endpoints, { name: 'llm.default.svc.cluster.local:80', endpoints: [] }];
      expect(problemsOf(() => fromWire(w))).toEqual(['endpoints[1].name: Service port "llm.default.svc.cluster.local:80" is listed twice; one entry per name']);
    });

    it('rollback() returns to the snapshot before the last one decoded (the one still serving when an apply failed)', () => {
      const { v1, delta } = pair();
      const decoder = new SnapshotDecoder();
      decoder.decodeParts(encodeSnapshotParts(v1));
      decoder.decodeParts(encodeSnapshotParts(twoRoutes('/z')));
      decoder.rollback();
      expect(decoder.version).toBe(v1.version);
      expect(decoder.decodeParts(delta).version).toBe(pair().v2.version);
    });
  });
});

describe('the bounds a snapshot was checked with', () => {
  // A route whose pattern compiles to 252 instructions: over the default 200, within 300.
  const base = sample();
  const listener = base.binds[0]!.listeners[0]!;
  const route = { ...listener.routes[0]!, matches: [{ path: { type: 'PathPrefix' as const, value: '/p' }, method: null, headers: [{ type: 'RegularExpression' as const, name: 'x-id', value: '[a-z]{150}[0-9]{100}' }], queryParams: [] }] };
  function withPattern(limits?: EvaluationLimits): ProxySnapshot {
    return withVersion({ source: base.source, binds: [{ ...base.binds[0]!, listeners: [{ ...listener, routes: [route] }] }], ...(limits ? { limits } : {}) });
  }
  const raised = resolveLimits({ regex: { maxProgramSize: 300 } });

  it('travel with it, are part of its version, and are what its routes are checked against', () => {
    const snap = withPattern(raised);
    expect(snapshotProblems(snap)).toEqual([]);
    const decoded = decodeSnapshot(encodeSnapshot(snap));
    expect(decoded.limits).toEqual(raised);
    expect(decoded.version).toBe(snap.version);
    expect(snap.version).not.toBe(withPattern(resolveLimits({ regex: { maxProgramSize: 301 } })).version);
    // Under the defaults the same route is refused, by the builder and by a proxy.
    expect(snapshotProblems(withPattern()).map((p) => p.path)).toEqual(['binds[0].listeners[0].routes[0].matches[0].headers[0].value']);
    // The list found valid under the raised bounds is checked again under the defaults, the snapshot before or not.
    const underDefaults = withVersion({ source: base.source, binds: snap.binds });
    expect(snapshotProblems(underDefaults, snap).map((p) => p.path)).toEqual(['binds[0].listeners[0].routes[0].matches[0].headers[0].value']);
    expect(problemsOf(() => decodeSnapshot(encodeSnapshot(withPattern())))).toEqual([expect.stringMatching(/headers\[0\]\.value: got .*more than the 200 allowed \(regex\.maxProgramSize\)/)]);
  });

  it('a decoder checks again, under new bounds, the routes it kept and those a delta refers to', () => {
    const decoder = new SnapshotDecoder();
    const first = withPattern(raised);
    decoder.decode(encodeSnapshot(first));
    // The same route, now under the defaults: as text it is known, as a delta it is referred to.
    const lowered = withPattern();
    expect(problemsOf(() => decoder.decode(encodeSnapshot(lowered)))).toEqual([expect.stringMatching(/more than the 200 allowed/)]);
    const parts = delta(lowered, { version: first.version, positions: routePositions(first) });
    expect(parts.routes).toEqual([]);
    expect(problemsOf(() => decoder.decodeParts(parts))).toEqual([expect.stringMatching(/more than the 200 allowed/)]);
  });
});
