// The reconciler's per-Gateway series end with the Gateway: a deleted Gateway, served or
// refused from its first snapshot on, leaves nothing in the scrape.
import { standaloneToSnapshot, validateStandaloneConfig, type ProxySnapshot } from '@tollgate/api';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ControllerMetrics } from '../src/metrics/metrics.js';
import { Reconciler } from '../src/reconcile/reconciler.js';
import { SnapshotStore } from '../src/snapshots/store.js';
import type { Resources, StatusReport, Translate } from '../src/translate/types.js';

function snapshot(gateway: string, route: string): ProxySnapshot {
  const config = { binds: [{ port: 18080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: route, backends: [{ host: '127.0.0.1:1' }] }] }] }] };
  return standaloneToSnapshot(validateStandaloneConfig(config, 'test'), { kind: 'controller', gateway });
}

describe('reconciler metrics', () => {
  it("drop a deleted Gateway's snapshot series, whether it was served or always refused", async () => {
    // The translation is the input here: what each reconcile yields is set by the test.
    let world = new Map<string, ProxySnapshot>();
    const translate: Translate = () => ({ snapshots: world, status: {} as StatusReport });
    // The store refuses every snapshot of apps/broken, as it refuses one a proxy would.
    const store = new SnapshotStore((s) => (s.source.kind === 'controller' && s.source.gateway === 'apps/broken' ? 'refused for the test' : undefined));
    const metrics = new ControllerMetrics();
    const reconciler = new Reconciler({
      resources: () => ({}) as Resources,
      translate,
      controllerName: 'tollgate.dev/gateway-controller',
      gatewayApiVersion: () => undefined,
      store,
      reports: { submit: () => undefined },
      metrics,
      log: pino({ level: 'silent' }),
    });
    const series = async (gateway: string) => (await metrics.registry.metrics()).split('\n').filter((l) => l.includes(`gateway="${gateway}"`));

    world = new Map([
      ['apps/good', snapshot('apps/good', 'r1')],
      ['apps/broken', snapshot('apps/broken', 'r1')],
    ]);
    reconciler.run();
    expect(await series('apps/good')).toContain('tollgate_controller_snapshot_updates_total{gateway="apps/good"} 1');
    expect(await series('apps/broken')).toEqual(['tollgate_controller_snapshots_refused_total{gateway="apps/broken"} 1']);

    // Both deleted.
    world = new Map();
    reconciler.run();
    expect(await series('apps/good')).toEqual([]);
    expect(await series('apps/broken')).toEqual([]);
  });
});
