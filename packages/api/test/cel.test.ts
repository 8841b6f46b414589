// CEL expressions: every one goes through compileCel(), which type-checks it against the
// surface's declared variables, estimates its cost from their declared bounds and refuses one
// over the budget, before anything evaluates it; bindRequest() refuses a request whose inputs
// are over the bounds the estimate assumed.
import { describe, expect, it } from 'vitest';
import { bindRequest, compileCel, DEFAULT_LIMITS, resolveLimits, type EvaluationLimits, type RequestInputs } from '../src/index.js';
import { nestingDepth } from '../src/cel/guard.js';

const compile = (source: string, limits: EvaluationLimits = DEFAULT_LIMITS) => compileCel(source, 'descriptor', limits);
const problem = (source: string, limits?: EvaluationLimits) => {
  const c = compile(source, limits);
  return c.ok ? null : c.problem;
};

function request(headers: Record<string, string> = {}, over: Partial<RequestInputs> = {}): RequestInputs {
  return { method: 'POST', path: '/v1/chat/completions', host: 'api.example.com', headers, sourceAddress: '198.18.0.7', model: 'gpt-4o', ...over };
}

function run(source: string, req: RequestInputs, limits: EvaluationLimits = DEFAULT_LIMITS) {
  const c = compile(source, limits);
  if (!c.ok) throw new Error(c.problem);
  const bound = bindRequest(req, c.value.reads, limits.cel);
  if (!bound.ok) throw new Error(bound.problem);
  return c.value.run(bound.bindings);
}

const manyHeaders = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, `v${i}`]));

describe('compileCel: what a descriptor may be', () => {
  it.each([
    ['request.headers["x-user-id"]', 'u1'],
    ['llm.model', 'gpt-4o'],
    ['request.headers["x-tenant"] + ":" + llm.model', 't1:gpt-4o'],
    ['has(request.headers.x) ? request.headers.x : "anon"', 'anon'],
    ['request.path.startsWith("/v1/chat") ? "chat" : "other"', 'chat'],
    ['request.headers.exists(k, k.startsWith("x-tenant"))', true],
    ['request.headers.filter(k, k.startsWith("x-")).size()', 2n],
    ['request.path.matches("^/v1/(chat|responses)")', true],
    ['request.method in ["GET", "POST"]', true],
    ['source.address', '198.18.0.7'],
    ['string(size(request.headers)) + "h"', '2h'],
  ])('accepts and evaluates %s', (source, value) => {
    const c = compile(source);
    expect(c.ok, c.ok ? '' : c.problem).toBe(true);
    expect(run(source, request({ 'x-user-id': 'u1', 'x-tenant': 't1' }))).toEqual({ ok: true, value });
  });

  it.each([
    ['request.foo', "does not type-check: request has no field 'foo' (its fields are method, path, host, headers)"],
    ['request.headers.all(h, h)', 'does not type-check: the predicate of all() must be a bool, got string'],
    ['1 + "a"', "does not type-check: no overload of '+' takes (int, string)"],
    ['unknown(1)', "does not type-check: function 'unknown' is not supported"],
    ['nobody.address', "does not type-check: undeclared reference to 'nobody' (the variables are request, source, llm, consumer, connection)"],
    ['request.path.matches(request.headers["x"])', 'does not type-check: the pattern of matches() must be a string literal'],
    ['request.path.matches("(?:.?){1000}")', 'does not type-check: matches("(?:.?){1000}"): with its repetitions written out'],
    ['request', 'evaluates to request; a rate limit descriptor value or key must be string, int, uint, double, bool'],
    ['request.headers["a"] == 1', 'does not type-check: cannot compare string with int'],
    ['timestamp("2024-01-01T00:00:00Z")', "does not type-check: function 'timestamp' is not supported"],
    ['request.headers.all(k, v, k == v)', 'does not type-check: all() is written x.all(v, <bool>); two-variable forms are not supported'],
  ])('refuses %s, saying why', (source, why) => {
    expect(problem(source)).toContain(why);
  });

  it('refuses a syntax error, and text the parser would take long to refuse, before parsing it', () => {
    expect(problem('request.headers[')).toMatch(/^not a valid CEL expression \(/);
    expect(problem('('.repeat(500))).toBe('brackets nest 500 deep, more than the 32 allowed; split the expression');
    expect(problem('['.repeat(300) + '1')).toBe('brackets nest 300 deep, more than the 32 allowed; split the expression');
    expect(problem(`request.path + "${'x'.repeat(1030)}"`)).toMatch(/^the expression is \d+ characters long, more than the 1024 allowed$/);
  });

  it('counts brackets outside string literals only, however they are quoted', () => {
    expect(nestingDepth('"((((" + \'[[[\' + """{{{""" + r"\\" + ((a))')).toBe(2);
    expect(nestingDepth("r'\\' + (((b)))")).toBe(3);
    expect(nestingDepth('"\\"(((" + [x]')).toBe(1);
  });
});

describe('compileCel: the cost budget', () => {
  // The 252-character nested comprehension, and the header cross product.
  const nested =
    'request.headers.all(a, request.headers.all(b, request.headers.all(c, request.headers.exists(d, a + b + c + d == request.path + request.host + llm.model && a.contains(b) && c.startsWith(d)))))';
  const crossProduct = 'request.headers.all(a, request.headers.all(b, a == b || a.contains(b) || b.contains(a)))';

  it('refuses the nested comprehension and the header cross product, naming the estimate and the budget', () => {
    expect(nested.length).toBeGreaterThan(150);
    for (const source of [nested, crossProduct]) {
      expect(problem(source)).toMatch(
        /^its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\) for inputs within the declared bounds \(up to 100 headers of 16384 characters, a path of 4096\)/,
      );
    }
  });

  it('estimates with the declared bounds: fewer headers allowed, a smaller estimate', () => {
    const cost = (limits: EvaluationLimits) => {
      const c = compile('request.headers.exists(k, k.startsWith("x-t"))', limits);
      return c.ok ? c.value.cost : Infinity;
    };
    const few = resolveLimits({ cel: { maxHeaders: 10 } });
    expect(cost(few)).toBeLessThan(cost(DEFAULT_LIMITS) / 5);
    // The cross product fits a budget raised to its estimate, and not one unit less.
    const generous = resolveLimits({ cel: { maxCost: 100_000_000, maxHeaders: 10, maxHeaderLength: 64 } });
    const c = compile(crossProduct, generous);
    expect(c.ok).toBe(true);
    const estimate = c.ok ? c.value.cost : 0;
    expect(compile(crossProduct, resolveLimits({ cel: { maxCost: estimate, maxHeaders: 10, maxHeaderLength: 64 } })).ok).toBe(true);
    expect(compile(crossProduct, resolveLimits({ cel: { maxCost: estimate - 1, maxHeaders: 10, maxHeaderLength: 64 } })).ok).toBe(false);
  });

  it('compiles each text once per surface and bounds', () => {
    const a = compile('request.headers["x-once"]');
    const b = compile('request.headers["x-once"]');
    expect(a.ok && b.ok && a.value === b.value).toBe(true);
    const c = compile('request.headers["x-once"]', resolveLimits({ cel: { maxHeaders: 5 } }));
    expect(c.ok && a.ok && c.value !== a.value).toBe(true);
  });
});

describe('bindRequest: inputs within the declared bounds', () => {
  const readsHeaders = compile('request.headers["x-user-id"]');
  const readsModel = compile('llm.model');
  if (!readsHeaders.ok || !readsModel.ok) throw new Error('setup');

  it('refuses 200 headers where an expression reads headers, and only there', () => {
    const req = request(manyHeaders(200));
    expect(bindRequest(req, readsHeaders.value.reads, DEFAULT_LIMITS.cel)).toEqual({
      ok: false,
      input: 'request.headers',
      problem: 'more than the 100 headers an expression here assumes (cel.maxHeaders)',
    });
    expect(bindRequest(req, readsModel.value.reads, DEFAULT_LIMITS.cel).ok).toBe(true);
    expect(bindRequest(request(manyHeaders(100)), readsHeaders.value.reads, DEFAULT_LIMITS.cel).ok).toBe(true);
  });

  it('refuses a header, a path or a model longer than assumed', () => {
    const cel = resolveLimits({ cel: { maxHeaderLength: 32, maxPathLength: 16 } }).cel;
    expect(bindRequest(request({ 'x-user-id': 'u'.repeat(33) }), readsHeaders.value.reads, cel)).toMatchObject({ ok: false, input: 'request.headers' });
    expect(bindRequest(request({ 'x-user-id': 'u'.repeat(32) }), readsHeaders.value.reads, cel).ok).toBe(true);
    const readsPath = compile('request.path', resolveLimits({ cel: { maxPathLength: 16 } }));
    if (!readsPath.ok) throw new Error(readsPath.problem);
    expect(bindRequest(request({}, { path: `/${'p'.repeat(16)}` }), readsPath.value.reads, cel)).toMatchObject({ ok: false, input: 'request.path' });
    expect(bindRequest(request({}, { model: 'm'.repeat(257) }), readsModel.value.reads, cel)).toMatchObject({ ok: false, input: 'llm.model' });
  });

  it('sees repeated headers joined, as the proxy forwards them', () => {
    expect(run('request.headers["x-a"]', request({}, { headers: { 'x-a': ['1', '2'] } }))).toEqual({ ok: true, value: '1, 2' });
  });
});

describe('bindRequest: the consumer of an authorization rule', () => {
  const rule = (source: string) => {
    const c = compileCel(source, 'authorization', DEFAULT_LIMITS);
    if (!c.ok) throw new Error(c.problem);
    return c.value;
  };
  const consumer = { name: 'alice', group: 'team-a', labels: { tier: 'gold' }, claims: null };
  const decide = (source: string, c: RequestInputs['consumer']) => {
    const r = rule(source);
    const bound = bindRequest(request({}, { consumer: c }), r.reads, DEFAULT_LIMITS.cel);
    return bound.ok ? r.run(bound.bindings) : bound;
  };

  it('without one, the fields are empty: name "", group "", no labels, no claims', () => {
    const empty = 'consumer.name == "" && consumer.group == "" && size(consumer.labels) == 0 && size(consumer.claims) == 0';
    expect(decide(empty, null)).toEqual({ ok: true, value: true });
    expect(decide(empty, undefined)).toEqual({ ok: true, value: true });
    expect(decide('consumer.name != ""', consumer)).toEqual({ ok: true, value: true });
    expect(decide('consumer.labels["tier"] == "gold" && consumer.group == "team-a"', consumer)).toEqual({ ok: true, value: true });
  });

  it('refuses a consumer whose fields the rules read are over the bounds the cost assumed, and only those', () => {
    const labels = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`l${i}`, 'v']));
    expect(decide('size(consumer.labels) > 0', { ...consumer, labels })).toMatchObject({ ok: false, input: 'consumer.labels' });
    expect(decide('consumer.name == "alice"', { ...consumer, labels })).toEqual({ ok: true, value: true });
    expect(decide('consumer.name == "alice"', { ...consumer, name: 'a'.repeat(254) })).toMatchObject({ ok: false, input: 'consumer.name' });
    expect(decide('"sub" in consumer.claims', { ...consumer, claims: { sub: 'x'.repeat(4097) } })).toMatchObject({ ok: false, input: 'consumer.claims' });
    expect(decide('"sub" in consumer.claims', { ...consumer, claims: { sub: 'x'.repeat(4096) } })).toEqual({ ok: true, value: true });
  });
});

describe('bindRequest: the verified client certificate (connection.*)', () => {
  const decide = (source: string, cert: RequestInputs['clientCertificate'], surface: 'authorization' | 'descriptor' = 'authorization') => {
    const c = compileCel(source, surface, DEFAULT_LIMITS);
    if (!c.ok) throw new Error(c.problem);
    const bound = bindRequest(request({}, { clientCertificate: cert }), c.value.reads, DEFAULT_LIMITS.cel);
    return bound.ok ? c.value.run(bound.bindings) : bound;
  };
  const cert = { subject: 'O=Example, CN=team-a', dnsSans: ['team-a.example'], uriSans: ['spiffe://example/team-a'] };

  it('without one: not verified, subject "", no names', () => {
    const empty = '!connection.verified && connection.subject == "" && size(connection.dnsSans) == 0 && size(connection.uriSans) == 0';
    expect(decide(empty, null)).toEqual({ ok: true, value: true });
    expect(decide(empty, undefined)).toEqual({ ok: true, value: true });
    expect(decide('connection.verified && connection.subject.endsWith("CN=team-a") && "spiffe://example/team-a" in connection.uriSans', cert)).toEqual({ ok: true, value: true });
    expect(decide('connection.subject', cert, 'descriptor')).toEqual({ ok: true, value: 'O=Example, CN=team-a' });
  });

  it('refuses a certificate whose fields the rules read are over the bounds the cost assumed, and only those', () => {
    const uris = Array.from({ length: 33 }, (_, i) => `spiffe://example/${i}`);
    expect(decide('"spiffe://example/32" in connection.uriSans', { ...cert, uriSans: uris })).toMatchObject({ ok: false, input: 'connection.uriSans' });
    expect(decide('connection.subject != ""', { ...cert, uriSans: uris })).toEqual({ ok: true, value: true });
    expect(decide('connection.subject != ""', { ...cert, subject: 'x'.repeat(1025) })).toMatchObject({ ok: false, input: 'connection.subject' });
    expect(decide('connection.subject != ""', { ...cert, subject: 'x'.repeat(1024) })).toEqual({ ok: true, value: true });
    expect(decide('size(connection.dnsSans) > 0', { ...cert, dnsSans: ['d'.repeat(1025)] })).toMatchObject({ ok: false, input: 'connection.dnsSans' });
  });
});
