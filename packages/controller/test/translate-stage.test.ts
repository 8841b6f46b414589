// The translate stage takes the echoes of status writes in between reconciles: one pass for a
// quiet spell's echoes, none while a reconcile runs or is due (it takes them in itself), none
// before the caches synced or after stop(). The pass's work itself (withoutEchoes) is
// status-echoes.property.test.ts's.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ControllerMetrics } from '../src/metrics/metrics.js';
import { Signal } from '../src/runtime/channels.js';
import { SnapshotStore } from '../src/snapshots/store.js';
import { SETTLE_DELAY_MS, TranslateStage } from '../src/stages/translate-stage.js';
import { withoutEchoes } from '../src/translate/status-echoes.js';
import type { Resources, StatusReport, Translate } from '../src/translate/types.js';
import { emptyResources } from './support.js';

function route(name: string, resourceVersion: string, status?: unknown) {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { namespace: 'apps', name, resourceVersion }, spec: { parentRefs: [{ name: 'gw' }] }, ...(status ? { status } : {}) };
}

function stage(opts: { resources: () => Resources | undefined; synced?: () => boolean; settle?: (r: Resources) => unknown; translate?: Translate; minDelayMs?: number }) {
  const changes = new Signal();
  const statusChanges = new Signal();
  const translated: Resources[] = [];
  const translate: Translate =
    opts.translate ??
    ((r) => {
      translated.push(r);
      return { snapshots: new Map(), status: {} as StatusReport };
    });
  const s = new TranslateStage({
    source: {
      get synced() {
        return opts.synced?.() ?? true;
      },
      resources: opts.resources,
    },
    changes,
    statusChanges,
    translate,
    ...(opts.settle ? { settle: opts.settle } : {}),
    controllerName: 'tollgate.dev/gateway-controller',
    gatewayApiVersion: () => undefined,
    store: new SnapshotStore(() => undefined),
    reports: { submit: () => undefined },
    metrics: new ControllerMetrics(),
    log: pino({ level: 'silent' }),
    queue: { minDelayMs: opts.minDelayMs ?? 0 },
  });
  return { stage: s, changes, statusChanges, translated };
}

describe('translate stage: status echoes between reconciles', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('takes a quiet spell of echoes in with one pass, on what the caches hold then', async () => {
    const world = emptyResources();
    const settled: Resources[] = [];
    const { stage: s, statusChanges } = stage({ resources: () => world, settle: (r) => settled.push(r) });
    for (let i = 0; i < 50; i++) statusChanges.raise();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS - 1);
    expect(settled).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toEqual([world]);
    expect(s.settlePasses).toBe(1);
    // The next echoes, a pass of their own.
    statusChanges.raise();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS);
    expect(settled).toHaveLength(2);
    await s.stop();
  });

  it('leaves the echoes to a reconcile that is due, and makes no pass before the caches synced, while a referenced object is read, or after stop()', async () => {
    const settled: Resources[] = [];
    let synced = false;
    let resources: Resources | undefined = emptyResources();
    // A cool-down longer than the pass's delay: a change raised during it waits for its end.
    const { stage: s, changes, statusChanges, translated } = stage({ resources: () => resources, synced: () => synced, settle: (r) => settled.push(r), minDelayMs: 10 * SETTLE_DELAY_MS });

    statusChanges.raise();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS);
    expect(settled).toHaveLength(0);

    synced = true;
    changes.raise();
    await vi.advanceTimersByTimeAsync(0);
    expect(translated).toHaveLength(1);
    changes.raise();
    expect(s.queue.depth).toBe(1);
    statusChanges.raise();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS);
    expect(settled).toHaveLength(0);
    // The reconcile at the end of the cool-down.
    await vi.advanceTimersByTimeAsync(10 * SETTLE_DELAY_MS);
    expect(translated).toHaveLength(2);

    resources = undefined;
    statusChanges.raise();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS);
    expect(settled).toHaveLength(0);

    resources = emptyResources();
    statusChanges.raise();
    await s.stop();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS);
    expect(settled).toHaveLength(0);
    expect(s.settlePasses).toBe(0);
  });

  it("by default takes them in with the translator's own, so the next translation is handed the list it was handed before", async () => {
    const before = emptyResources();
    before.httpRoutes = [route('a', '1'), route('b', '2')] as never;
    let world: Resources = before;
    const { stage: s, changes, statusChanges, translated } = stage({ resources: () => world });
    changes.raise();
    await vi.advanceTimersByTimeAsync(0);
    expect(translated).toHaveLength(1);
    // The translation's own call: the list it hands out for the routes.
    const handed = withoutEchoes('HTTPRoute', before.httpRoutes as never);

    // Both routes' status written: echoes in the cache, no reconcile. Their specs count the
    // reads of the comparison that tells an echo.
    let reads = 0;
    const counted = (o: ReturnType<typeof route>) => {
      const { spec, ...rest } = o;
      return Object.defineProperty(rest, 'spec', {
        enumerable: true,
        get: () => {
          reads++;
          return spec;
        },
      });
    };
    const echoes = { ...before, httpRoutes: [counted(route('a', '3', { parents: [] })), counted(route('b', '4', { parents: [] }))] };
    world = echoes as unknown as Resources;
    statusChanges.raise();
    await vi.advanceTimersByTimeAsync(SETTLE_DELAY_MS);
    expect(s.settlePasses).toBe(1);
    expect(reads).toBeGreaterThan(0);
    // The pass took the echoes in: the next call is handed the same list (by object) without
    // comparing anything again.
    const compared = reads;
    expect(withoutEchoes('HTTPRoute', echoes.httpRoutes as never)).toBe(handed);
    expect(reads).toBe(compared);
    await s.stop();
  });
});
