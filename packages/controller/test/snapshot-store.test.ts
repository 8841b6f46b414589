import type { ProxySnapshot } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../src/snapshots/store.js';

const snap = (gateway: string, version: string, bad = false) =>
  ({ version, source: { kind: 'controller', gateway }, binds: bad ? 'broken' : [] }) as unknown as ProxySnapshot;

describe('SnapshotStore', () => {
  const store = new SnapshotStore((s) => (Array.isArray(s.binds) ? undefined : 'binds is not a list'));

  it('keeps the last good snapshot of a Gateway when its new one is refused', () => {
    expect(store.offer(new Map([['a/gw', snap('a/gw', 'v1')]]))).toEqual({ changed: ['a/gw'], removed: [], refused: [] });
    const r = store.offer(new Map([['a/gw', snap('a/gw', 'v2', true)]]));
    expect(r.refused).toEqual([{ gateway: 'a/gw', reason: 'binds is not a list' }]);
    expect(store.get('a/gw')?.version).toBe('v1');
    expect(store.offer(new Map([['a/gw', snap('a/gw', 'v3')]])).changed).toEqual(['a/gw']);
    expect(store.get('a/gw')?.version).toBe('v3');
  });

  it('an unchanged version is not a change; a Gateway no longer served is removed', () => {
    const since = store.get('a/gw')!.since;
    expect(store.offer(new Map([['a/gw', snap('a/gw', 'v3')]]), new Date(since.getTime() + 1000))).toEqual({ changed: [], removed: [], refused: [] });
    expect(store.get('a/gw')!.since).toBe(since);
    expect(store.offer(new Map()).removed).toEqual(['a/gw']);
    expect(store.entries()).toEqual([]);
  });
});
