// The memory compaction after a config apply: a real full collection once the process is quiet
// after start and after each reload that grew it, none while a request is in flight, one for a
// burst of applies, none after the process stops.
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { collectGarbage } from '@tollgate/kit';
import { MemoryCompaction, type CompactionOutcome } from '../src/process/memory-compaction.js';
import { send, simpleConfig, startGateway, startUpstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** Outcomes in the order they came; `next()` resolves with the next one not yet taken. */
function outcomes() {
  const seen: CompactionOutcome[] = [];
  const waiting: ((o: CompactionOutcome) => void)[] = [];
  let taken = 0;
  return {
    push(o: CompactionOutcome) {
      seen.push(o);
      waiting.shift()?.(o);
    },
    next(): Promise<CompactionOutcome> {
      const i = taken++;
      return i < seen.length ? Promise.resolve(seen[i]!) : new Promise((resolve) => waiting.push(resolve));
    },
    get count() {
      return seen.length;
    },
  };
}

const silent = pino({ level: 'silent' });

describe('memory compaction after a config apply', () => {
  it('runs a real full collection after the start and after each reload', async () => {
    const up = await startUpstream((_req, res) => res.end('ok'));
    const seen = outcomes();
    let collections = 0;
    const collect = async () => {
      collections++;
      return collectGarbage();
    };
    const route = { name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: up.host }] };
    // Every reload counts as growth here (the default asks for 16 MiB or more).
    const gw = await startGateway((port) => simpleConfig(port, [route]), { compactMemory: { delayMs: 10, minGrowthBytes: Number.NEGATIVE_INFINITY, collect, onOutcome: (o) => seen.push(o) } });
    cleanups.push(() => up.close(), () => gw.close());

    const first = await seen.next();
    expect(first).toMatchObject({ kind: 'collected', ms: expect.any(Number) as unknown });
    expect((first as { ms: number }).ms).toBeGreaterThan(0);
    expect((await send(`${gw.url}/a`)).status).toBe(200);

    expect(await gw.rewrite(simpleConfig(gw.port, [route, { ...route, name: 'b', matches: [{ path: { value: '/b' } }] }]))).toBe('reloaded');
    expect((await seen.next()).kind).toBe('collected');
    expect(collections).toBe(2);
    expect((await send(`${gw.url}/b`)).status).toBe(200);
  });

  it('does not collect while a request is in flight, and collects once it is done', async () => {
    let release: () => void = () => undefined;
    let arrived: () => void = () => undefined;
    const inBackend = new Promise<void>((resolve) => (arrived = resolve));
    const up = await startUpstream((_req, res) => {
      arrived();
      release = () => res.end('late');
    });
    const seen = outcomes();
    const route = { name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: up.host }] };
    const gw = await startGateway((port) => simpleConfig(port, [route]), { compactMemory: { delayMs: 5, attempts: 3, minGrowthBytes: Number.NEGATIVE_INFINITY, onOutcome: (o) => seen.push(o) } });
    cleanups.push(() => up.close(), () => gw.close());
    expect((await seen.next()).kind).toBe('collected');

    const slow = send(`${gw.url}/a`);
    await inBackend;
    const b = { ...route, name: 'b', matches: [{ path: { value: '/b' } }] };
    expect(await gw.rewrite(simpleConfig(gw.port, [route, b]))).toBe('reloaded');
    // Every quiet period it waited for had the request in flight.
    expect((await seen.next()).kind).toBe('busy');
    release();
    expect((await slow).status).toBe(200);

    expect(await gw.rewrite(simpleConfig(gw.port, [route]))).toBe('reloaded');
    expect((await seen.next()).kind).toBe('collected');
  });

  it('after the first, collects only once the process has grown by the threshold since the last', async () => {
    const up = await startUpstream((_req, res) => res.end('ok'));
    const seen = outcomes();
    let collections = 0;
    const collect = async () => {
      collections++;
      return collectGarbage();
    };
    const route = { name: 'a', matches: [{ path: { value: '/a' } }], backends: [{ host: up.host }] };
    const gw = await startGateway((port) => simpleConfig(port, [route]), { compactMemory: { delayMs: 10, minGrowthBytes: 1024 ** 4, collect, onOutcome: (o) => seen.push(o) } });
    cleanups.push(() => up.close(), () => gw.close());
    expect((await seen.next()).kind).toBe('collected');

    expect(await gw.rewrite(simpleConfig(gw.port, [route, { ...route, name: 'b', matches: [{ path: { value: '/b' } }] }]))).toBe('reloaded');
    const second = await seen.next();
    expect(second).toMatchObject({ kind: 'unneeded', grownBytes: expect.any(Number) as unknown });
    expect((second as { grownBytes: number }).grownBytes).toBeLessThan(1024 ** 4);
    expect(collections).toBe(1);
    expect((await send(`${gw.url}/b`)).status).toBe(200);
  });

  it('waits for a period in which no request began, and gives up while requests keep coming', async () => {
    let started = 0;
    let collections = 0;
    const seen = outcomes();
    const c = new MemoryCompaction({
      // A request begins at every check: no period is ever quiet.
      requests: () => ({ started: ++started, inFlight: 0 }),
      log: silent,
      delayMs: 1,
      attempts: 4,
      collect: async () => ++collections,
      onOutcome: (o) => seen.push(o),
    });
    c.schedule();
    expect((await seen.next()).kind).toBe('busy');
    expect(collections).toBe(0);
    c.stop();
  });

  it('collects once for a burst of applies, and never after stop', async () => {
    let collections = 0;
    const seen = outcomes();
    const c = new MemoryCompaction({
      requests: () => ({ started: 0, inFlight: 0 }),
      log: silent,
      delayMs: 1,
      collect: async () => ++collections,
      onOutcome: (o) => seen.push(o),
    });
    c.schedule();
    c.schedule();
    c.schedule();
    expect((await seen.next()).kind).toBe('collected');
    expect(collections).toBe(1);
    c.schedule();
    expect(c.pending).toBe(true);
    c.stop();
    expect(c.pending).toBe(false);
    c.schedule();
    expect(c.pending).toBe(false);
    expect(seen.count).toBe(1);
  });

  it('reports a collection that fails and goes on', async () => {
    const seen = outcomes();
    const c = new MemoryCompaction({
      requests: () => ({ started: 0, inFlight: 0 }),
      log: silent,
      delayMs: 1,
      collect: () => Promise.reject(new Error('no inspector in this build')),
      onOutcome: (o) => seen.push(o),
    });
    c.schedule();
    const o = await seen.next();
    expect(o).toMatchObject({ kind: 'failed', err: expect.objectContaining({ message: 'no inspector in this build' }) as unknown });
    c.stop();
  });
});
