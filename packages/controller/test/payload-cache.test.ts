// The payload cache alone: what it encodes for a proxy holding a version, decoded by the
// proxy's own decoder from the wire bytes; how often it encodes; which bases it keeps.
import { SnapshotDecoder, type ProxySnapshot } from '@tollgate/api';
import { decodeSnapshotPush, encodeSnapshotPush, type PreparedPayload } from '@tollgate/api/snapshot-stream';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PayloadCache } from '../src/snapshots/payload-cache.js';
import { GATEWAY, partsOf, routesOf, snapshot, withRoutes } from './stream-snapshots.js';

function cache() {
  const registry = new Registry();
  const encodings = new Counter({ name: 'encodings', help: 'h', labelNames: ['form'], registers: [registry] });
  const count = async (form: string) => (await encodings.get()).values.find((v) => v.labels.form === form)?.value ?? 0;
  return { payloads: new PayloadCache(encodings), count };
}

/** The payload as a proxy receives it. */
const received = (version: string, payload: PreparedPayload) => decodeSnapshotPush(encodeSnapshotPush({ version, nonce: 'n', payload }));
const entry = (s: ProxySnapshot) => ({ version: s.version, snapshot: s });

describe('payload cache', () => {
  it('encodes the full form once per version and a delta once per (version, base)', async () => {
    const { payloads, count } = cache();
    const v1 = snapshot('one');
    const a = payloads.payload(GATEWAY, entry(v1), null);
    const b = payloads.payload(GATEWAY, entry(v1), null);
    expect([a.form, b.payload]).toEqual(['full', a.payload]);
    const decoder = new SnapshotDecoder();
    const first = decoder.decodeParts(partsOf(received(v1.version, a.payload)));
    expect(first.version).toBe(v1.version);

    const v2 = withRoutes(v1, [routesOf(v1)[0]!, routesOf(snapshot('two'))[0]!]);
    const d = payloads.payload(GATEWAY, entry(v2), v1.version);
    expect(payloads.payload(GATEWAY, entry(v2), v1.version).payload).toBe(d.payload);
    const push = received(v2.version, d.payload);
    // Only the new route's text travels; the kept one is its position in v1.
    expect([d.form, push.baseVersion, push.routeRefs, push.routes.length]).toEqual(['delta', v1.version, [1, 0], 1]);
    const second = decoder.decodeParts(partsOf(push));
    expect([second.version, routesOf(second)[0]]).toEqual([v2.version, routesOf(first)[0]]);
    expect([await count('full'), await count('delta')]).toEqual([1, 1]);
  });

  it('sends the full form for a version it holds no base of', async () => {
    const { payloads, count } = cache();
    const v1 = snapshot('one');
    const p = payloads.payload(GATEWAY, entry(v1), 'aaaaaaaaaaaa');
    expect([p.form, received(v1.version, p.payload).baseVersion]).toEqual(['full', '']);
    expect(await count('delta')).toBe(0);
  });

  it('keeps only the bases the sweep names, per Gateway, and forgets a Gateway', () => {
    const { payloads } = cache();
    const v1 = snapshot('one');
    const v2 = snapshot('two');
    const v3 = snapshot('three');
    for (const v of [v1, v2, v3]) payloads.payload(GATEWAY, entry(v), null);
    payloads.payload('edge/other', entry(v1), null);
    expect(payloads.baseVersions(GATEWAY)).toEqual([v1.version, v2.version, v3.version]);
    payloads.sweep(GATEWAY, new Set([v3.version, v1.version, null, undefined]));
    expect(payloads.baseVersions(GATEWAY)).toEqual([v1.version, v3.version]);
    // A swept base is no base: a proxy holding v2 gets the full form.
    expect(payloads.payload(GATEWAY, entry(v3), v2.version).form).toBe('full');
    expect(payloads.payload(GATEWAY, entry(v3), v1.version).form).toBe('delta');
    payloads.sweep(GATEWAY, new Set());
    expect(payloads.baseVersions(GATEWAY)).toEqual([]);
    expect(payloads.baseVersions('edge/other')).toEqual([v1.version]);
    payloads.forget('edge/other');
    expect(payloads.baseVersions('edge/other')).toEqual([]);
  });
});
