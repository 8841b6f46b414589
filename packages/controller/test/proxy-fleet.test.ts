// The proxy fleet alone, without gRPC: proxies join with a link that records what is sent to
// them, the store changes, and the answers are chosen by the test; the metrics are read from a
// real registry.
import type { OutgoingPush } from '@tollgate/api/snapshot-stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PayloadCache } from '../src/snapshots/payload-cache.js';
import { ProxyFleet, type NackReport } from '../src/snapshots/proxy-fleet.js';
import { ProxyStream } from '../src/snapshots/proxy-stream.js';
import { SnapshotStore } from '../src/snapshots/store.js';
import { StreamMetrics } from '../src/snapshots/stream-metrics.js';
import { GATEWAY, routesOf, snapshot, withRoutes } from './stream-snapshots.js';

/** A link that keeps what is sent; `next()` resolves with the next push. */
class Recorder {
  readonly peer = 'ipv4:127.0.0.1:5000';
  readonly #sent: OutgoingPush[] = [];
  readonly #waiters: ((p: OutgoingPush) => void)[] = [];
  ended = false;
  send(p: OutgoingPush): void {
    const w = this.#waiters.shift();
    if (w) w(p);
    else this.#sent.push(p);
  }
  end(): void {
    this.ended = true;
  }
  /** Pushes sent and not taken yet. */
  get queued(): number {
    return this.#sent.length;
  }
  next(): Promise<OutgoingPush> {
    const p = this.#sent.shift();
    return p ? Promise.resolve(p) : new Promise((resolve) => this.#waiters.push(resolve));
  }
}

function fleet(answerTimeoutMs = 600_000) {
  const store = new SnapshotStore();
  const registry = new Registry();
  const metrics = new StreamMetrics(registry);
  const events: string[] = [];
  const nacks: NackReport[] = [];
  const f = new ProxyFleet({
    store,
    payloads: new PayloadCache(metrics.encodings),
    metrics,
    log: pino({ level: 'silent' }),
    answerTimeoutMs,
    onNack: (r) => nacks.push(r),
    onRejectionChange: (g) => events.push(`rejection ${g}`),
    onProxiesChange: (g) => events.push(`proxies ${g}`),
  });
  store.onChange((r) => f.storeChanged(r));
  const join = (pod: string, version = '', deltas = true) => {
    const link = new Recorder();
    const s = new ProxyStream(link, GATEWAY, pod, 'edge', version, deltas);
    f.add(s);
    f.push(s);
    return { s, link };
  };
  const series = async (name: string) => (await registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`));
  return { f, store, events, nacks, join, series, offer: (v: ReturnType<typeof snapshot>) => store.offer(new Map([[GATEWAY, v]])) };
}

describe('proxy fleet', () => {
  it('sends the current version on join, one unanswered push at a time, then the newest after the ACK', async () => {
    const t = fleet();
    const v1 = snapshot('one');
    t.offer(v1);
    const { s, link } = t.join('a');
    const first = await link.next();
    expect(first.version).toBe(v1.version);
    t.offer(snapshot('two'));
    const v3 = snapshot('three');
    t.offer(v3);
    expect([link.queued, s.view().pending]).toEqual([0, v1.version]);
    t.f.ack(s, first.version, 'not-the-nonce');
    expect(link.queued).toBe(0);
    t.f.ack(s, first.version, first.nonce);
    const third = await link.next();
    expect(third.version).toBe(v3.version);
    expect(t.events).toEqual([`proxies ${GATEWAY}`, `proxies ${GATEWAY}`]);
    expect(await t.series('tollgate_controller_stream_acked_proxies')).toEqual([`tollgate_controller_stream_acked_proxies{gateway="${GATEWAY}",version="${v1.version}"} 1`]);
    // The series of the version it held before goes with its next ACK.
    t.f.ack(s, third.version, third.nonce);
    expect(await t.series('tollgate_controller_stream_acked_proxies')).toEqual([`tollgate_controller_stream_acked_proxies{gateway="${GATEWAY}",version="${v3.version}"} 1`]);
  });

  it('a NACK rejects the Gateway until every proxy ACKed another version; the refused one is not sent again', async () => {
    const t = fleet();
    const v1 = snapshot('one');
    t.offer(v1);
    const a = t.join('a');
    const b = t.join('b');
    const pa = await a.link.next();
    t.f.ack(a.s, pa.version, pa.nonce);
    const pb = await b.link.next();
    t.f.nack(b.s, pb.nonce, 'port taken', false);
    expect(t.nacks).toEqual([{ gateway: GATEWAY, pod: 'b', version: v1.version, error: 'port taken' }]);
    expect(t.f.rejection(GATEWAY)).toEqual({ version: v1.version, pod: 'b', error: 'port taken' });
    expect(b.link.queued).toBe(0);
    const v2 = withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]);
    t.offer(v2);
    const [a2, b2] = [await a.link.next(), await b.link.next()];
    // After its NACK, b is sent the full form; a, which ACKed v1, a delta.
    expect([a2.payload.bytes.length < b2.payload.bytes.length]).toEqual([true]);
    t.f.ack(a.s, a2.version, a2.nonce);
    expect(t.f.rejection(GATEWAY)?.version).toBe(v1.version);
    t.f.ack(b.s, b2.version, b2.nonce);
    expect(t.f.rejection(GATEWAY)).toBeUndefined();
    expect(t.events.filter((e) => e.startsWith('rejection'))).toEqual([`rejection ${GATEWAY}`, `rejection ${GATEWAY}`]);
  });

  it('answered() resolves once no proxy has a push unanswered: after ACKs, a NACK, or the stream gone', async () => {
    const t = fleet();
    /** Whether answered() asked now has resolved once the microtasks queued so far ran. */
    const settledNow = async (p: Promise<void>) => {
      let done = false;
      void p.then(() => (done = true));
      await Promise.resolve();
      await Promise.resolve();
      return done;
    };
    expect(await settledNow(t.f.answered(600_000))).toBe(true);
    const v1 = snapshot('one');
    t.offer(v1);
    const a = t.join('a');
    const b = t.join('b');
    const [pa, pb] = [await a.link.next(), await b.link.next()];
    const both = t.f.answered(600_000);
    expect(await settledNow(both)).toBe(false);
    t.f.ack(a.s, pa.version, pa.nonce);
    expect(await settledNow(both)).toBe(false);
    t.f.nack(b.s, pb.nonce, 'port taken', false);
    expect(await settledNow(both)).toBe(true);

    // A newer version: pending until the one proxy that takes it answers or goes away.
    t.offer(withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]));
    await a.link.next();
    await b.link.next();
    const again = t.f.answered(600_000);
    t.f.remove(a.s);
    expect(await settledNow(again)).toBe(false);
    t.f.remove(b.s);
    expect(await settledNow(again)).toBe(true);
    expect(t.f.waiting).toBe(0);

    // A proxy that never answers: each caller waits its bound and leaves, none is kept.
    t.offer(snapshot('three'));
    const c = t.join('c');
    await c.link.next();
    await t.f.answered(1);
    await t.f.answered(1);
    expect(t.f.waiting).toBe(0);
  });

  it('a delta the proxy cannot resolve goes again in full, with no rejection', async () => {
    const t = fleet();
    const v1 = snapshot('one');
    t.offer(v1);
    const { s, link } = t.join('a');
    const first = await link.next();
    t.f.ack(s, first.version, first.nonce);
    const v2 = withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]);
    t.offer(v2);
    const delta = await link.next();
    t.f.nack(s, delta.nonce, 'unknown base', true);
    const full = await link.next();
    expect([full.version, full.payload.bytes.length > delta.payload.bytes.length]).toEqual([v2.version, true]);
    expect([t.nacks, t.f.rejection(GATEWAY)]).toEqual([[], undefined]);
  });

  it('an unanswered push times out and the current version is sent again with a new nonce', async () => {
    const t = fleet(20);
    const v1 = snapshot('one');
    t.offer(v1);
    const { s, link } = t.join('a');
    const first = await link.next();
    const again = await link.next();
    expect([again.version, again.nonce === first.nonce]).toEqual([v1.version, false]);
    // The late answer to the first push is stale; the answer to the second counts.
    t.f.ack(s, first.version, first.nonce);
    expect(s.acked).toBeNull();
    t.f.ack(s, again.version, again.nonce);
    expect(s.acked).toBe(v1.version);
    t.f.remove(s);
  });

  it("a proxy that goes away takes its version's series along; a deleted Gateway is forgotten with its last proxy", async () => {
    const t = fleet();
    const v1 = snapshot('one');
    t.offer(v1);
    const a = t.join('a', v1.version);
    const b = t.join('b', v1.version);
    const c = t.join('c');
    const pc = await c.link.next();
    t.f.nack(c.s, pc.nonce, 'refused', false);
    expect(await t.series('tollgate_controller_stream_acked_proxies')).toEqual([`tollgate_controller_stream_acked_proxies{gateway="${GATEWAY}",version="${v1.version}"} 2`]);
    t.f.remove(a.s);
    expect([a.link.ended, t.f.count(GATEWAY)]).toEqual([true, 2]);
    expect(await t.series('tollgate_controller_stream_acked_proxies')).toEqual([`tollgate_controller_stream_acked_proxies{gateway="${GATEWAY}",version="${v1.version}"} 1`]);
    t.f.remove(b.s, false);
    expect(b.link.ended).toBe(false);
    expect(await t.series('tollgate_controller_stream_acked_proxies')).toEqual([]);
    // Deleted while c is connected: its series and rejection stay until c goes.
    t.store.offer(new Map());
    expect(t.f.rejection(GATEWAY)?.version).toBe(v1.version);
    expect(await t.series('tollgate_controller_stream_proxies')).toEqual([`tollgate_controller_stream_proxies{gateway="${GATEWAY}"} 1`]);
    t.f.remove(c.s);
    expect([t.f.rejection(GATEWAY), t.f.proxies().size]).toEqual([undefined, 0]);
    expect(await t.series('tollgate_controller_stream_proxies')).toEqual([]);
    expect(await t.series('tollgate_controller_stream_answers_total')).toEqual([]);
  });
});
