// Global rate limits against the real envoyproxy/ratelimit service backed by redis-server, both
// started on loopback by test/support/rls.ts: requests and tokens descriptors, CEL over the
// request, the headers of a decision, and compile-time errors. Windows are a day long so a
// window boundary cannot fall inside a run in practice; every test uses its own keys.
import { randomUUID } from 'node:crypto';
import { DEFAULT_LIMITS, type GlobalRateLimitIR } from '@tollgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compileGlobalLimiter,
  GlobalRateLimitConfigError,
  RlsClientPool,
  type GlobalLimiter,
  type RequestFacts,
} from '../src/ratelimit/global/index.js';
import { captureLog } from './support/log.js';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const availability = rlsAvailability();
const DAY = 86_400;

const CONFIGS = {
  'tg-requests': `
domain: tg-requests
descriptors:
  - key: user
    rate_limit: { unit: day, requests_per_unit: 3 }
`,
  'tg-match': `
domain: tg-match
descriptors:
  - key: model
    value: gpt-small
    rate_limit: { unit: day, requests_per_unit: 1 }
  - key: model
    rate_limit: { unit: day, requests_per_unit: 2 }
  - key: route
    value: chat
    descriptors:
      - key: method
        rate_limit: { unit: hour, requests_per_unit: 2 }
  - key: client
    rate_limit: { unit: day, requests_per_unit: 1 }
`,
  'tg-tokens': `
domain: tg-tokens
descriptors:
  - key: tenant
    rate_limit: { unit: day, requests_per_unit: 100 }
  - key: tenant_requests
    rate_limit: { unit: day, requests_per_unit: 4 }
`,
};

function facts(over: Partial<RequestFacts> = {}): RequestFacts {
  return {
    method: 'POST',
    path: '/v1/chat/completions',
    host: 'api.example.com',
    headers: {},
    sourceAddress: '127.0.0.1',
    model: null,
    consumer: null,
    ...over,
  };
}

const uid = (): string => randomUUID().slice(0, 12);

describe.skipIf(!availability.run)('global rate limits on envoyproxy/ratelimit', () => {
  let rls: RlsService;
  const pool = new RlsClientPool();
  const { log, lines } = captureLog();

  const limiter = (ir: Partial<GlobalRateLimitIR> & Pick<GlobalRateLimitIR, 'domain' | 'descriptors'>): GlobalLimiter =>
    compileGlobalLimiter({ service: rls.address, failureMode: 'FailClosed', timeoutMs: 2000, ...ir }, { log, clients: pool }, DEFAULT_LIMITS);

  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: CONFIGS, responseHeaders: true });
  });
  afterAll(async () => {
    await pool.close();
    await rls?.stop();
  });

  it('allows a requests descriptor up to its limit, then answers 429 with the limit headers', async () => {
    const g = limiter({ domain: 'tg-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user-id"]' }] }] });
    expect(g.hasTokens).toBe(false);
    const user = facts({ headers: { 'x-user-id': `u-${uid()}` } });

    for (const remaining of [2, 1, 0]) {
      const c = await g.check(user);
      expect(c).toMatchObject({ allowed: true, outcome: 'ok', status: 200 });
      expect(c.headers['x-ratelimit-limit']).toBe(`3, 3;w=${DAY}`);
      expect(c.headers['x-ratelimit-remaining']).toBe(String(remaining));
      expect(c.headers['x-proxy-ratelimited']).toBeUndefined();
    }

    const over = await g.check(user);
    expect(over).toMatchObject({ allowed: false, outcome: 'overLimit', status: 429, body: 'rate limit exceeded' });
    expect(over.headers['x-proxy-ratelimited']).toBe('true');
    expect(over.headers['x-ratelimit-limit']).toBe(`3, 3;w=${DAY}`);
    expect(over.headers['x-ratelimit-remaining']).toBe('0');
    const reset = Number(over.headers['x-ratelimit-reset']);
    expect(Number.isInteger(reset) && reset > 0 && reset <= DAY).toBe(true);
    // The service's own response headers (LIMIT_RESPONSE_HEADERS_ENABLED) are passed through.
    expect(over.headers['ratelimit-limit']).toBe('3');
    expect(over.headers['ratelimit-remaining']).toBe('0');
    expect(over.headers['ratelimit-reset']).toMatch(/^\d+$/);

    // Counters are per descriptor value: another user is not limited.
    const other = await g.check(facts({ headers: { 'x-user-id': `u-${uid()}` } }));
    expect(other).toMatchObject({ allowed: true, outcome: 'ok' });
    expect(other.headers['x-ratelimit-remaining']).toBe('2');
  });

  it('does not send a descriptor whose expression has no value (missing header), as Envoy does', async () => {
    const g = limiter({ domain: 'tg-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user-id"]' }] }] });
    lines.length = 0;
    for (let i = 0; i < 5; i++) {
      const c = await g.check(facts());
      expect(c).toMatchObject({ allowed: true, outcome: 'ok', headers: {} });
    }
    const skipped = lines.filter((l) => l.msg.includes('descriptor not sent'));
    expect(skipped).toHaveLength(5);
    expect(skipped[0]).toMatchObject({ level: 20, descriptor: 0, entry: 'user' });
    expect(String(skipped[0]!.reason)).toContain('x-user-id');

    // An empty value is no value either.
    lines.length = 0;
    expect(await g.check(facts({ headers: { 'x-user-id': '' } }))).toMatchObject({ allowed: true, outcome: 'ok', headers: {} });
    expect(lines.find((l) => l.msg.includes('descriptor not sent'))).toMatchObject({ entry: 'user', reason: expect.stringContaining('not a non-empty') as unknown });
    // A non-scalar one (here a map) never gets this far: the type checker refuses it.
    expect(() => limiter({ domain: 'tg-requests', descriptors: [{ unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers' }] }] })).toThrow(
      /evaluates to map\(string, string\); a rate limit descriptor value or key must be string, int, uint, double, bool/,
    );
  });

  it('evaluates CEL over the LLM model, with a per-value limit and a default', async () => {
    const g = limiter({ domain: 'tg-match', descriptors: [{ unit: 'Requests', entries: [{ name: 'model', expression: 'llm.model' }] }] });
    // gpt-small: 1 per day. The model value is shared by the whole suite, so this test owns it.
    expect((await g.check(facts({ model: 'gpt-small' }))).allowed).toBe(true);
    const over = await g.check(facts({ model: 'gpt-small' }));
    expect(over).toMatchObject({ allowed: false, outcome: 'overLimit', status: 429 });
    expect(over.headers['x-ratelimit-limit']).toBe(`1, 1;w=${DAY}`);

    const model = `m-${uid()}`; // any other model: the default of 2 per day
    expect((await g.check(facts({ model }))).headers['x-ratelimit-limit']).toBe(`2, 2;w=${DAY}`);
    expect((await g.check(facts({ model }))).allowed).toBe(true);
    expect((await g.check(facts({ model }))).allowed).toBe(false);

    // Unknown model: llm.model is "", an empty value, so the descriptor is not sent.
    for (let i = 0; i < 3; i++) expect(await g.check(facts({ model: null }))).toMatchObject({ allowed: true, headers: {} });
  });

  it('builds nested descriptors from the path and the method', async () => {
    const g = limiter({
      domain: 'tg-match',
      descriptors: [
        {
          unit: 'Requests',
          entries: [
            { name: 'route', expression: 'request.path.startsWith("/v1/chat") ? "chat" : "other"' },
            { name: 'method', expression: 'request.method' },
          ],
        },
      ],
    });
    const first = await g.check(facts({ method: 'PUT' }));
    expect(first.headers['x-ratelimit-limit']).toBe('2, 2;w=3600');
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect((await g.check(facts({ method: 'PUT' }))).allowed).toBe(true);
    expect((await g.check(facts({ method: 'PUT' }))).allowed).toBe(false);
    // Each method value has its own counter under route=chat.
    expect((await g.check(facts({ method: 'PATCH' }))).allowed).toBe(true);
    // Another path gives route=other, which has no rule: allowed, no limit to report.
    for (let i = 0; i < 3; i++) {
      const other = await g.check(facts({ method: 'PUT', path: '/v1/embeddings' }));
      expect(other).toMatchObject({ allowed: true, outcome: 'ok' });
      expect(other.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('limits on the source address and on request.host', async () => {
    const g = limiter({ domain: 'tg-match', descriptors: [{ unit: 'Requests', entries: [{ name: 'client', expression: 'source.address + "@" + request.host' }] }] });
    const host = `h-${uid()}.example.com`;
    expect((await g.check(facts({ sourceAddress: '10.0.0.1', host }))).allowed).toBe(true);
    expect((await g.check(facts({ sourceAddress: '10.0.0.1', host }))).allowed).toBe(false);
    expect((await g.check(facts({ sourceAddress: '10.0.0.2', host }))).allowed).toBe(true);
  });

  it('checks a tokens descriptor without charging it and charges the usage after the response', async () => {
    const g = limiter({ domain: 'tg-tokens', descriptors: [{ unit: 'Tokens', entries: [{ name: 'tenant', expression: 'request.headers["x-tenant"]' }] }] });
    expect(g.hasTokens).toBe(true);
    const tenant = facts({ headers: { 'x-tenant': `t-${uid()}` } });

    // Checks alone never use the budget.
    for (let i = 0; i < 3; i++) {
      const c = await g.check(tenant);
      expect(c).toMatchObject({ allowed: true, outcome: 'ok' });
      expect(c.headers['x-ratelimit-limit']).toBe(`100, 100;w=${DAY}`);
      expect(c.headers['x-ratelimit-remaining']).toBe('100');
    }

    const a = await g.check(tenant);
    await a.settle(60);
    await a.settle(0); // no-op
    const b = await g.check(tenant);
    expect(b.headers['x-ratelimit-remaining']).toBe('40');

    // At the budget exactly: still within (spec §3.1: "at or below the limit").
    await b.settle(40);
    const c = await g.check(tenant);
    expect(c).toMatchObject({ allowed: true, outcome: 'ok' });
    expect(c.headers['x-ratelimit-remaining']).toBe('0');

    // The request that crosses the budget has succeeded; the next one is refused.
    await c.settle(25);
    const d = await g.check(tenant);
    expect(d).toMatchObject({ allowed: false, outcome: 'overLimit', status: 429, body: 'rate limit exceeded' });
    expect(d.headers['x-proxy-ratelimited']).toBe('true');
    expect(d.headers['x-ratelimit-remaining']).toBe('0');
    await d.settle(1000); // refused requests charge nothing (and this must not throw)

    // Another tenant has its own budget.
    expect((await g.check(facts({ headers: { 'x-tenant': `t-${uid()}` } }))).headers['x-ratelimit-remaining']).toBe('100');
  });

  it('combines requests and tokens descriptors in one call: requests are charged, tokens only checked', async () => {
    const g = limiter({
      domain: 'tg-tokens',
      descriptors: [
        { unit: 'Requests', entries: [{ name: 'tenant_requests', expression: 'request.headers["x-tenant"]' }] },
        { unit: 'Tokens', entries: [{ name: 'tenant', expression: 'request.headers["x-tenant"]' }] },
      ],
    });
    expect(g.hasTokens).toBe(true);
    const tenant = facts({ headers: { 'x-tenant': `t-${uid()}` } });

    const first = await g.check(tenant);
    // Least remaining: the requests descriptor (3 of 4 left) rather than the tokens one (100).
    expect(first.headers['x-ratelimit-limit']).toBe(`4, 4;w=${DAY}`);
    expect(first.headers['x-ratelimit-remaining']).toBe('3');
    await first.settle(99);

    const second = await g.check(tenant);
    // Now the tokens descriptor has 1 left, the requests one 2.
    expect(second.headers['x-ratelimit-limit']).toBe(`100, 100;w=${DAY}`);
    expect(second.headers['x-ratelimit-remaining']).toBe('1');
    await second.settle(2);

    const third = await g.check(tenant);
    expect(third).toMatchObject({ allowed: false, outcome: 'overLimit' });
  });

  it('shares one channel per service address across limiters and config generations', () => {
    const ir = { domain: 'tg-requests', descriptors: [{ unit: 'Requests' as const, entries: [{ name: 'user', expression: 'request.path' }] }] };
    limiter(ir);
    limiter(ir);
    expect(pool.addresses()).toEqual([rls.address]);
  });
});

describe('global rate limit config', () => {
  const pool = new RlsClientPool();
  afterAll(() => pool.close());

  it('rejects an expression that does not parse, naming the descriptor, the entry and the parser error', () => {
    const { log } = captureLog();
    const compile = (): GlobalLimiter =>
      compileGlobalLimiter(
        {
          service: '127.0.0.1:1',
          domain: 'd',
          failureMode: 'FailOpen',
          timeoutMs: 100,
          descriptors: [
            { unit: 'Requests', entries: [{ name: 'ok', expression: 'request.path' }] },
            { unit: 'Tokens', entries: [{ name: 'a', expression: 'llm.model' }, { name: 'user', expression: 'request.headers["x-user"' }] },
          ],
        },
        { log, clients: pool },
        DEFAULT_LIMITS,
      );
    expect(compile).toThrow(GlobalRateLimitConfigError);
    expect(compile).toThrow(/^rateLimit\.global\.descriptors\[1\]\.entries\[1\] \(user\): expression "request\.headers\[\\"x-user\\"": not a valid CEL expression \(.*<input>:1:\d+/);
    // Compilation failed before any channel was opened.
    expect(pool.addresses()).toEqual([]);
  });
});
