// The DNS cache of Backend host names: an answer kept for its TTL (bounded both ways) and
// resolved again after; the last good addresses serve while re-resolution fails, for
// staleMs and no longer; a stale answer serves at once while the new one is asked. The clock
// is the test's and the resolver a function the test answers, so each step is an event; the
// last case dials a real server through an endpoint whose pool looks names up in the cache.
// The caches of several threads merge into one entry a name.
import { describe, expect, it } from 'vitest';
import { startMockLlm } from '@tollgate/mock-llm';
import { deferred, until } from '@tollgate/testkit';
import { DEFAULT_DNS, DnsCache, newestNames, type Answer } from '../src/upstream/dns-cache.js';
import { EndpointTable } from '../src/upstream/endpoints.js';
import { simpleConfig, startGateway } from './helpers.js';

function harness(settings: Partial<typeof DEFAULT_DNS> = {}) {
  let now = 1_000_000;
  const asked: string[] = [];
  const answers: (Answer | Error | Promise<Answer>)[] = [];
  const cache = new DnsCache({ ...DEFAULT_DNS, ...settings }, () => now, async (name) => {
    asked.push(name);
    const next = answers.shift();
    if (next === undefined) throw new Error(`no answer queued for ${name}`);
    if (next instanceof Error) throw next;
    return next;
  });
  return { cache, asked, answers, advance: (ms: number) => (now += ms) };
}

const v4 = (...addresses: string[]) => addresses.map((address) => ({ address, family: 4 }));
const servfail = () => Object.assign(new Error('queryA ESERVFAIL provider.test'), { code: 'ESERVFAIL' });

describe('DnsCache', () => {
  it('keeps an answer for its TTL and resolves again after it', async () => {
    const h = harness();
    h.answers.push({ addresses: v4('10.0.0.1'), ttlMs: 60_000 });
    expect((await h.cache.addresses('provider.test')).map((a) => a.address)).toEqual(['10.0.0.1']);
    h.advance(59_999);
    await h.cache.addresses('provider.test');
    expect(h.asked).toHaveLength(1);
    h.advance(1);
    h.answers.push({ addresses: v4('10.0.0.2'), ttlMs: 60_000 });
    // The old answer serves at once (still within staleMs); the next lookup has the new one.
    await h.cache.addresses('provider.test');
    expect(h.asked).toHaveLength(2);
    expect((await h.cache.addresses('provider.test')).map((a) => a.address)).toEqual(['10.0.0.2']);
  });

  it('bounds the TTL: a TTL of 0 is kept minTtlMs, a day maxTtlMs', async () => {
    const h = harness({ minTtlMs: 5_000, maxTtlMs: 120_000 });
    h.answers.push({ addresses: v4('10.0.0.1'), ttlMs: 0 }, { addresses: v4('10.0.0.1'), ttlMs: 86_400_000 });
    await h.cache.addresses('a.test');
    h.advance(4_999);
    await h.cache.addresses('a.test');
    expect(h.asked).toHaveLength(1);
    h.advance(1);
    await h.cache.addresses('a.test');
    expect(h.asked).toHaveLength(2);
    h.advance(119_999);
    await h.cache.addresses('a.test');
    expect(h.asked).toHaveLength(2);
    h.advance(1);
    h.answers.push({ addresses: v4('10.0.0.1'), ttlMs: 1_000 });
    await h.cache.addresses('a.test');
    expect(h.asked).toHaveLength(3);
  });

  it('keeps the last good addresses while resolution fails, for staleMs, then fails naming the cause', async () => {
    const h = harness({ staleMs: 30_000, retryMs: 1_000 });
    h.answers.push({ addresses: v4('10.0.0.1', '10.0.0.2'), ttlMs: 10_000 });
    await h.cache.addresses('provider.test');
    h.advance(10_000);
    h.answers.push(servfail());
    expect((await h.cache.addresses('provider.test')).length).toBe(2);
    // Failed: tried again only after retryMs.
    await h.cache.addresses('provider.test');
    expect(h.asked).toHaveLength(2);
    h.advance(1_000);
    h.answers.push(servfail());
    await h.cache.addresses('provider.test');
    expect(h.asked).toHaveLength(3);
    // Past the TTL plus staleMs: the failure is the answer.
    h.advance(29_000);
    h.answers.push(servfail());
    await expect(h.cache.addresses('provider.test')).rejects.toThrow('ESERVFAIL');
    // A name that never resolved has nothing to keep.
    h.answers.push(servfail());
    await expect(h.cache.addresses('never.test')).rejects.toThrow('ESERVFAIL');
  });

  it('serves the stale answer at once while the new one is asked; one question for concurrent lookups', async () => {
    const h = harness();
    h.answers.push({ addresses: v4('10.0.0.1'), ttlMs: 1_000 });
    await h.cache.addresses('provider.test');
    h.advance(1_000);
    const slow = deferred<Answer>();
    h.answers.push(slow.promise);
    const [a, b] = await Promise.all([h.cache.addresses('provider.test'), h.cache.addresses('provider.test')]);
    expect(a[0]!.address).toBe('10.0.0.1');
    expect(b[0]!.address).toBe('10.0.0.1');
    expect(h.asked).toHaveLength(2);
    slow.resolve({ addresses: v4('10.0.0.9'), ttlMs: 1_000 });
    // The answer lands a few promise turns later; no new question is asked meanwhile.
    await until(async () => (await h.cache.addresses('provider.test'))[0]!.address === '10.0.0.9');
    expect(h.asked).toHaveLength(2);
  });

  it("the caches of several threads show one entry a name: the newest answer any has, with when it came", async () => {
    const main = harness();
    const worker = harness();
    main.answers.push({ addresses: v4('10.0.0.1'), ttlMs: 60_000 });
    await main.cache.addresses('provider.test');
    worker.advance(1_000);
    worker.answers.push({ addresses: v4('10.0.0.2'), ttlMs: 60_000 });
    await worker.cache.addresses('provider.test');
    worker.answers.push(servfail());
    await expect(worker.cache.addresses('down.test')).rejects.toThrow('ESERVFAIL');
    const names = newestNames([main.cache.view(), worker.cache.view()]);
    expect(names.map((n) => [n.hostname, n.addresses, n.resolvedAt, n.error])).toEqual([
      ['provider.test', ['10.0.0.2'], new Date(1_001_000).toISOString(), null],
      ['down.test', [], null, 'queryA ESERVFAIL provider.test'],
    ]);
  });

  it('rotates the addresses between lookups; IP literals are not looked up', async () => {
    const h = harness();
    h.answers.push({ addresses: v4('10.0.0.1', '10.0.0.2', '10.0.0.3'), ttlMs: 60_000 });
    const firsts = [];
    for (let i = 0; i < 3; i++) firsts.push((await h.cache.addresses('p.test'))[0]!.address);
    expect(firsts).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect((await h.cache.addresses('192.0.2.7'))[0]).toEqual({ address: '192.0.2.7', family: 4 });
    expect(h.asked).toEqual(['p.test']);
  });

  it('holds at most maxNames names, the least recently used dropped first', async () => {
    const h = harness({ maxNames: 2 });
    for (const n of ['a.test', 'b.test', 'a.test', 'c.test', 'a.test', 'b.test']) {
      h.answers.push({ addresses: v4('10.0.0.1'), ttlMs: 60_000 });
      await h.cache.addresses(n);
    }
    // b.test was dropped for c.test (a.test was used since), so it was asked again.
    expect(h.asked).toEqual(['a.test', 'b.test', 'c.test', 'b.test']);
    expect(h.cache.view().map((v) => v.hostname)).toEqual(['a.test', 'b.test']);
  });

  it('an endpoint of a Backend dials the cached address of its name over a real socket; the name stays its Host', async () => {
    const seen: string[] = [];
    const llm = await startMockLlm({ onRequest: (r) => seen.push(String(r.headers.host)) });
    try {
      const h = harness();
      h.answers.push({ addresses: v4('127.0.0.1'), ttlMs: 60_000 });
      const table = new EndpointTable({ connectTimeoutMs: 5_000, clock: Date.now, dns: h.cache });
      const endpoint = table.acquire('llm.provider.test', llm.port, undefined, true);
      const res = await endpoint.pool.request({ method: 'GET', path: '/v1/models' });
      expect(res.statusCode).toBe(200);
      await res.body.text();
      expect(seen).toEqual([`llm.provider.test:${llm.port}`]);
      expect(h.asked).toEqual(['llm.provider.test']);
      await table.close();
    } finally {
      await llm.close();
    }
  });

  it('a new answer replaces the pool: kept-alive connections to the old address are not reused', async () => {
    // Two servers on one port, at the name's old and new addresses.
    const seen: string[] = [];
    const old = await startMockLlm({ host: '127.0.0.1', onRequest: () => seen.push('old') });
    const next = await startMockLlm({ host: '127.0.0.2', port: old.port, onRequest: () => seen.push('new') });
    const h = harness();
    const table = new EndpointTable({ connectTimeoutMs: 5_000, clock: Date.now, dns: h.cache });
    try {
      h.answers.push({ addresses: v4('127.0.0.1'), ttlMs: 1_000 });
      const endpoint = table.acquire('llm.provider.test', old.port, undefined, true);
      const get = async () => {
        const res = await endpoint.pool.request({ method: 'GET', path: '/v1/models' });
        await res.body.text();
        return res.statusCode;
      };
      expect(await get()).toBe(200);
      h.advance(1_000);
      h.answers.push({ addresses: v4('127.0.0.2'), ttlMs: 60_000 });
      // The TTL is over: this request starts the new question and goes out on the connection it has.
      expect(await get()).toBe(200);
      await until(() => (h.cache.view()[0]?.addresses[0] === '127.0.0.2' ? true : undefined));
      expect(await get()).toBe(200);
      expect(await get()).toBe(200);
      expect(seen).toEqual(['old', 'old', 'new', 'new']);
      // The same addresses again keep the pool (and its connection).
      const revision = h.cache.revision('llm.provider.test');
      h.advance(60_000);
      h.answers.push({ addresses: v4('127.0.0.2'), ttlMs: 60_000 });
      expect(await get()).toBe(200);
      await until(() => (h.asked.length === 3 ? true : undefined));
      expect(h.cache.revision('llm.provider.test')).toBe(revision);
      expect(await get()).toBe(200);
      expect(seen).toEqual(['old', 'old', 'new', 'new', 'new', 'new']);
    } finally {
      await table.close();
      await Promise.all([old.close(), next.close()]);
    }
  });
});

describe('config.dns', () => {
  it('sets the cache\'s bounds, shown in config_dump; a minTtl above maxTtl is refused naming it', async () => {
    const gw = await startGateway((port) => ({ config: { dns: { minTtl: '2s', maxTtl: '1m', staleFor: '0s', maxNames: 10 } }, ...simpleConfig(port, []) }));
    try {
      const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { dns: { settings: Record<string, number>; names: unknown[] } };
      expect(dump.dns.settings).toMatchObject({ minTtlMs: 2_000, maxTtlMs: 60_000, staleMs: 0, maxNames: 10 });
      expect(dump.dns.names).toEqual([]);
    } finally {
      await gw.close();
    }
    await expect(startGateway((port) => ({ config: { dns: { minTtl: '2m', maxTtl: '1m' } }, ...simpleConfig(port, []) }))).rejects.toThrow('config.dns.minTtl: got 2m; it must not be more than maxTtl (1m)');
  });
});
