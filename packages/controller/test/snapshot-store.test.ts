import { standaloneToSnapshot, validateStandaloneConfig, withVersion, type ProxySnapshot } from '@tollgate/api';
import { describe, expect, it } from 'vitest';
import { SnapshotStore } from '../src/snapshots/store.js';
import { checkSnapshot } from '../src/snapshots/validate.js';

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

describe('SnapshotStore with the controller check', () => {
  const good = (path: string) =>
    standaloneToSnapshot(
      validateStandaloneConfig({ binds: [{ port: 8080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: 'a', backends: [{ host: '127.0.0.1:1' }] }, { name: 'b', matches: [{ path: { type: 'PathPrefix', value: path } }], backends: [{ host: '127.0.0.1:1' }] }] }] }] }, 'test'),
      { kind: 'controller', gateway: 'a/gw' },
    );

  it('never offers a snapshot with a route proxies would refuse, though its other routes were checked before', () => {
    const store = new SnapshotStore(checkSnapshot);
    const v1 = good('/b');
    expect(store.offer(new Map([['a/gw', v1]])).changed).toEqual(['a/gw']);
    const listener = v1.binds[0]!.listeners[0]!;
    // Built as a translator bug would: the first route object reused, the second one broken.
    const broken = { ...listener.routes[1]!, matches: [{ path: { type: 'RegularExpression' as const, value: '(?<=x)y' }, method: null, headers: [], queryParams: [] }] };
    const v2 = withVersion({ source: v1.source, binds: [{ ...v1.binds[0]!, listeners: [{ ...listener, routes: [listener.routes[0]!, broken] }] }] });
    const r = store.offer(new Map([['a/gw', v2]]));
    expect(r.changed).toEqual([]);
    expect(r.refused.map((x) => x.gateway)).toEqual(['a/gw']);
    expect(r.refused[0]!.reason).toMatch(/binds\[0\]\.listeners\[0\]\.routes\[1\]\.matches\[0\]\.path\.value: got "\(\?<=x\)y"/);
    expect(store.get('a/gw')?.version).toBe(v1.version);
    expect(store.offer(new Map([['a/gw', good('/c')]])).changed).toEqual(['a/gw']);
  });
});
