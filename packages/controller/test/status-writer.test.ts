import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ControllerMetrics } from '../src/metrics/metrics.js';
import { Signal } from '../src/runtime/channels.js';
import type { StatusApi, StatusKind } from '../src/status/api.js';
import type { ProxiesView, Rejection } from '../src/status/proxies.js';
import { StatusWriter } from '../src/status/writer.js';
import { ChangeLog } from '../src/watch/change-log.js';
import { recordPatch } from '../src/translate/key-order.js';
import type { StatusReport } from '../src/translate/types.js';

const OURS = 'tollgate.dev/gateway-controller';
type Obj = KubernetesObject & { status?: Record<string, unknown> };

/**
 * One GatewayClass on a pretend API server with resourceVersion checks, for what the writer
 * decides to write. Its retries (a 409 from a second writer, 5xx, resets, a 404) are proven on
 * the real kube-apiserver in e2e/controller-api-faults.test.ts.
 */
class FakeApi implements StatusApi {
  stored: Obj = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'tollgate', resourceVersion: '1', generation: 1 } };
  puts = 0;
  async get(): Promise<KubernetesObject | undefined> {
    return structuredClone(this.stored);
  }
  /** Writes to refuse with a 500 before taking one. */
  failing = 0;
  async replaceStatus(_kind: StatusKind, obj: KubernetesObject): Promise<KubernetesObject> {
    this.puts++;
    if (this.failing > 0) {
      this.failing--;
      throw Object.assign(new Error('internal error'), { code: 500 });
    }
    if (obj.metadata?.resourceVersion !== this.stored.metadata?.resourceVersion) throw Object.assign(new Error('conflict'), { code: 409 });
    this.stored = { ...(obj as Obj), metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata!.resourceVersion) + 1) } };
    return structuredClone(this.stored);
  }
}

const report = (status: 'True' | 'False'): StatusReport => ({
  gatewayClasses: new Map([['tollgate', { name: 'tollgate', generation: 1, conditions: [{ type: 'Accepted', status, reason: status === 'True' ? 'Accepted' : 'InvalidParameters', message: '', observedGeneration: 1 }], supportedFeatures: [] }]]),
  gateways: new Map(),
  httpRoutes: new Map(),
  gatewayPolicies: new Map(),
  backendTLSPolicies: new Map(),
});

function setup(leader = { value: true }) {
  const api = new FakeApi();
  let cache: Obj = structuredClone(api.stored);
  const metrics = new ControllerMetrics();
  const w = new StatusWriter({ api, cache: () => cache, controllerName: OURS, isLeader: () => leader.value, metrics, log: pino({ level: 'silent' }) });
  const syncCache = () => (cache = structuredClone(api.stored));
  const count = async (result: string) => (await metrics.statusWrites.get()).values.filter((v) => v.labels.result === result).reduce((a, v) => a + v.value, 0);
  return { api, w, syncCache, count };
}

describe('StatusWriter', () => {
  it('writes a change once, then skips the same report (also before the cache caught up)', async () => {
    const { api, w, count, syncCache } = setup();
    await w.start();
    w.submit(report('True'));
    await w.idle();
    expect(api.puts).toBe(1);
    w.submit(report('True')); // cache still shows resourceVersion 1
    await w.idle();
    syncCache();
    w.submit(report('True'));
    await w.idle();
    expect(api.puts).toBe(1);
    expect(await count('written')).toBe(1);
  });

  it('forgets its write to an object once the object leaves the report (deleted)', async () => {
    const { api, w } = setup();
    await w.start();
    w.submit(report('True'));
    await w.idle();
    expect(api.puts).toBe(1);
    // The cache has not caught up: the write is remembered while the object is reported.
    w.submit(report('True'));
    await w.idle();
    expect(w.remembered).toBe(1);
    w.submit({ gatewayClasses: new Map(), gateways: new Map(), httpRoutes: new Map(), gatewayPolicies: new Map(), backendTLSPolicies: new Map() });
    await w.idle();
    expect(w.remembered).toBe(0);
  });

  it('writes nothing while not leader, and catches up when it becomes leader', async () => {
    const leader = { value: false };
    const { api, w } = setup(leader);
    await w.start();
    w.submit(report('True'));
    await w.idle();
    expect(api.puts).toBe(0);
    leader.value = true;
    await w.stop();
    await w.start();
    await w.idle();
    expect(api.puts).toBe(1);
  });
});

/**
 * A writer told what changed in its cache (a change log, as each informer keeps): `syncCache()`
 * is the watch bringing the stored object into the cache; `reads` counts the cache reads.
 */
function trackedSetup(retry?: { initialMs: number; maxMs: number }) {
  const api = new FakeApi();
  const changes = new ChangeLog();
  const state = { cache: structuredClone<Obj>(api.stored), reads: 0 };
  const w = new StatusWriter({
    api,
    cache: () => {
      state.reads++;
      return state.cache;
    },
    cacheChanges: { count: () => changes.count, since: (_kind, n) => changes.since(n) },
    controllerName: OURS,
    isLeader: () => true,
    metrics: new ControllerMetrics(),
    log: pino({ level: 'silent' }),
    ...(retry ? { retry } : {}),
  });
  const syncCache = () => {
    state.cache = structuredClone(api.stored);
    changes.changed('tollgate');
  };
  /** Another writer's status on the stored object (a new resourceVersion). */
  const rewrittenElsewhere = () => {
    api.stored = { ...api.stored, status: { conditions: [] }, metadata: { ...api.stored.metadata, resourceVersion: String(Number(api.stored.metadata!.resourceVersion) + 1) } };
  };
  /** A pass over `rep`: the objects it read from the cache. */
  const pass = async (rep: StatusReport): Promise<number> => {
    state.reads = 0;
    w.submit(rep);
    await w.idle();
    return state.reads;
  };
  return { api, w, changes, state, syncCache, rewrittenElsewhere, pass };
}

describe('StatusWriter: what changed since the last pass', () => {
  it('skips an object whose report entry and cached object have not changed since it was found settled; reads it again when either did', async () => {
    const { api, w, changes, syncCache, rewrittenElsewhere, pass } = trackedSetup();
    await w.start();
    const r = report('True');
    await pass(r);
    expect(api.puts).toBe(1);
    // Our write comes back through the watch: read again, nothing to write, settled.
    syncCache();
    expect(await pass(r)).toBe(1);
    expect(api.puts).toBe(1);
    // Nothing moved: not read.
    expect(await pass(r)).toBe(0);
    expect(w.lastPassSkipped).toBe(1);
    // Another object of the kind changed: still not read.
    changes.changed('other');
    expect(await pass(r)).toBe(0);

    // Someone else rewrites the status: its key changed, so it is read and put back.
    rewrittenElsewhere();
    syncCache();
    await pass(r);
    expect(api.puts).toBe(2);
    expect((api.stored.status!.conditions as { status: string }[])[0]!.status).toBe('True');
    syncCache();
    await pass(r);
    expect(await pass(r)).toBe(0);

    // Another report map holding the same entry object (another object's status changed): not read either.
    const copy = () => ({ ...r, gatewayClasses: new Map(r.gatewayClasses) });
    expect(await pass(copy())).toBe(0);
    // A list since (the watch was lost): what changed is not known, so it is read.
    changes.reset();
    expect(await pass(copy())).toBe(1);

    // Another report map, equal content in another entry object: read (no write), then skipped again.
    const again = report('True');
    expect(await pass(again)).toBe(1);
    expect(api.puts).toBe(2);
    expect(await pass(again)).toBe(0);
    // Another content: written.
    w.submit(report('False'));
    await w.idle();
    expect(api.puts).toBe(3);
  });
});

describe('StatusWriter: a report map that says what changed', () => {
  it('looks only at the keys a patched map names (and those the cache changed), not at every key', async () => {
    const { api, w, changes, syncCache, pass } = trackedSetup();
    await w.start();
    const r = report('True');
    await pass(r);
    syncCache();
    await pass(r);
    expect(await pass(r)).toBe(0);
    // A map copied with nothing said of it: looked at key by key (settled without a read).
    const copied = { ...r, gatewayClasses: new Map(r.gatewayClasses) };
    await pass(copied);
    expect(w.lastPassVisited).toBe(1);
    // Made from that one, no key changed: not looked at.
    const same = { ...r, gatewayClasses: new Map(copied.gatewayClasses) };
    recordPatch(copied.gatewayClasses, same.gatewayClasses, []);
    expect(await pass(same)).toBe(0);
    expect(w.lastPassVisited).toBe(0);
    expect(w.lastPassSkipped).toBe(1);
    // ...unless the cache changed it since.
    changes.changed('tollgate');
    const again = { ...r, gatewayClasses: new Map(same.gatewayClasses) };
    recordPatch(same.gatewayClasses, again.gatewayClasses, []);
    expect(await pass(again)).toBe(1);
    expect(w.lastPassVisited).toBe(1);
    // A key named changed: looked at, and its new status written.
    const changedEntry = { ...r, gatewayClasses: new Map(report('False').gatewayClasses) };
    recordPatch(again.gatewayClasses, changedEntry.gatewayClasses, ['tollgate']);
    await pass(changedEntry);
    expect(w.lastPassVisited).toBe(1);
    expect(api.puts).toBe(2);
    expect((api.stored.status!.conditions as { status: string }[])[0]!.status).toBe('False');
    // Made from a map the last pass did not visit: what changed is not known, every key is looked at.
    const skippedOne = new Map(changedEntry.gatewayClasses);
    const fromSkipped = { ...r, gatewayClasses: new Map(skippedOne) };
    recordPatch(skippedOne, fromSkipped.gatewayClasses, []);
    await pass(fromSkipped);
    expect(w.lastPassVisited).toBe(1);
  });
});

describe('StatusWriter: a status changed in the cache alone', () => {
  it('is read again without a new report (recheck), and what another writer took away is put back', async () => {
    const { api, w, syncCache, rewrittenElsewhere } = trackedSetup();
    await w.start();
    w.submit(report('True'));
    await w.idle();
    expect(api.puts).toBe(1);
    // Our write comes back: read, nothing to write.
    syncCache();
    w.recheck();
    await w.idle();
    expect(api.puts).toBe(1);
    // Another writer empties it: put back by the recheck its change asks for (a second within a second waits for it).
    rewrittenElsewhere();
    syncCache();
    w.recheck();
    w.recheck();
    await w.idle();
    expect(api.puts).toBe(2);
    expect((api.stored.status!.conditions as { status: string }[])[0]!.status).toBe('True');
    await w.stop();
  });
});

describe('StatusWriter: what changed since the last pass, failures', () => {
  it('an object whose write failed is written by the next pass, though neither its entry nor its cached copy changed', async () => {
    const { api, w } = trackedSetup({ initialMs: 60_000, maxMs: 60_000 });
    await w.start();
    api.failing = 1;
    const r = report('True');
    w.submit(r);
    await w.idle();
    expect(api.puts).toBe(1);
    expect(api.stored.status).toBeUndefined();
    w.submit(r);
    await w.idle();
    expect(api.puts).toBe(2);
    expect((api.stored.status!.conditions as { status: string }[])[0]!.status).toBe('True');
    await w.stop();
  });
});

describe('StatusWriter: settled objects', () => {
  it('skips an object whose report entry and stored object are unchanged since its last check, and merges again when either changes', async () => {
    const { api, w, syncCache } = setup();
    await w.start();
    const r = report('True');
    w.submit(r);
    await w.idle();
    syncCache();
    expect(api.puts).toBe(1);
    // The same report again: merged once against the written object (nothing to write), then settled.
    w.submit(r);
    await w.idle();
    expect(w.lastPassSkipped).toBe(0);
    w.submit(r);
    await w.idle();
    expect(w.lastPassSkipped).toBe(1);
    expect(api.puts).toBe(1);

    // Someone else rewrites the status (a new resourceVersion): merged again and put back, though the report entry is the same object.
    api.stored = { ...api.stored, status: { conditions: [] }, metadata: { ...api.stored.metadata, resourceVersion: String(Number(api.stored.metadata!.resourceVersion) + 1) } };
    syncCache();
    w.submit(r);
    await w.idle();
    expect(w.lastPassSkipped).toBe(0);
    expect(api.puts).toBe(2);
    expect((api.stored.status!.conditions as { status: string }[])[0]!.status).toBe('True');

    // A new report entry with other content on the same stored object: merged and written.
    syncCache();
    w.submit(report('False'));
    await w.idle();
    expect(w.lastPassSkipped).toBe(0);
    expect(api.puts).toBe(3);
    expect((api.stored.status!.conditions as { status: string }[])[0]!.status).toBe('False');
  });

  it('lets work already due run before a pass: an immediate queued before submit runs before the pass reads anything', async () => {
    const order: string[] = [];
    const cache = () => {
      order.push('pass');
      return undefined;
    };
    const w = new StatusWriter({ api: { get: async () => undefined, replaceStatus: async (_k, o) => o }, cache, controllerName: OURS, isLeader: () => true, metrics: new ControllerMetrics(), log: pino({ level: 'silent' }) });
    await w.start();
    setImmediate(() => order.push('due'));
    w.submit(report('True'));
    order.push('submitted');
    await w.idle();
    expect(order).toEqual(['submitted', 'due', 'pass']);
  });
});

/** Objects of several kinds on a pretend API server: each put bumps resourceVersion; a put can be made to fail once. */
class Store implements StatusApi {
  readonly objects = new Map<string, Obj>();
  readonly puts: string[] = [];
  readonly failOnce = new Set<string>();
  /** Called after each put that stored an object. */
  onStored: (key: string) => void = () => {};
  add(kind: StatusKind, namespace: string, name: string): void {
    this.objects.set(`${kind}/${namespace}/${name}`, { apiVersion: 'gateway.networking.k8s.io/v1', kind, metadata: { name, namespace, resourceVersion: '1', generation: 1 } });
  }
  read = (kind: StatusKind, name: string, namespace?: string): Obj | undefined => this.objects.get(`${kind}/${namespace}/${name}`);
  async get(kind: StatusKind, name: string, namespace?: string): Promise<KubernetesObject | undefined> {
    return structuredClone(this.read(kind, name, namespace));
  }
  async replaceStatus(kind: StatusKind, obj: KubernetesObject): Promise<KubernetesObject> {
    const key = `${kind}/${obj.metadata!.namespace}/${obj.metadata!.name}`;
    this.puts.push(key);
    if (this.failOnce.delete(key)) throw Object.assign(new Error('etcdserver: request timed out'), { code: 500 });
    const stored = { ...(obj as Obj), metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata!.resourceVersion) + 1) } };
    this.objects.set(key, stored);
    this.onStored(key);
    return structuredClone(stored);
  }
}

const condition = (type: string, status: 'True' | 'False') => ({ type, status, reason: type, message: '', observedGeneration: 1 });

describe('StatusWriter: the proxies', () => {
  it('merges only the Gateways when the proxies change, and a route whose write failed is still retried after such a pass', async () => {
    const store = new Store();
    store.add('Gateway', 'apps', 'edge');
    store.add('HTTPRoute', 'apps', 'r1');
    const proxies: ProxiesView = { changed: new Signal(), rejection: () => undefined, programmedInput: () => undefined, addresses: () => [] };
    const w = new StatusWriter({ api: store, cache: store.read, controllerName: OURS, isLeader: () => true, metrics: new ControllerMetrics(), log: pino({ level: 'silent' }), proxies, retry: { initialMs: 10, maxMs: 10 } });
    const reportWith = (accepted: 'True' | 'False'): StatusReport => ({
      gatewayClasses: new Map(),
      gateways: new Map([['apps/edge', { namespace: 'apps', name: 'edge', generation: 1, conditions: [condition('Programmed', 'False')], listeners: [] }]]),
      httpRoutes: new Map([['apps/r1', { namespace: 'apps', name: 'r1', generation: 1, parents: [{ parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'apps', name: 'edge' }, controllerName: OURS, conditions: [condition('Accepted', accepted)] }] }]]),
      gatewayPolicies: new Map(),
      backendTLSPolicies: new Map(),
    });
    const accepted = () => ((store.read('HTTPRoute', 'r1', 'apps')?.status?.parents as { conditions: { status: string }[] }[] | undefined)?.[0]?.conditions[0]?.status);
    await w.start();
    w.submit(reportWith('True'));
    await w.idle();
    expect(store.puts.sort()).toEqual(['Gateway/apps/edge', 'HTTPRoute/apps/r1']);
    expect(accepted()).toBe('True');

    // A change of the proxies (an ACK, a pod ready) reads the Gateways again, not the routes:
    // the route's status, cleared meanwhile by someone else, is put back by the next report.
    const r1 = store.read('HTTPRoute', 'r1', 'apps')!;
    store.objects.set('HTTPRoute/apps/r1', { ...r1, status: {}, metadata: { ...r1.metadata, resourceVersion: '9' } });
    store.puts.length = 0;
    proxies.changed.raise();
    await w.idle();
    expect(store.puts).toEqual([]);
    expect(accepted()).toBeUndefined();
    w.submit(reportWith('True'));
    await w.idle();
    expect(store.puts).toEqual(['HTTPRoute/apps/r1']);
    expect(accepted()).toBe('True');

    // The route's write fails; a pass of the Gateways comes before the retry: the retry still writes the route.
    store.puts.length = 0;
    store.failOnce.add('HTTPRoute/apps/r1');
    const retried = new Promise<void>((resolve) => (store.onStored = (key) => key === 'HTTPRoute/apps/r1' && resolve()));
    w.submit(reportWith('False'));
    await w.idle();
    expect(store.puts).toEqual(['HTTPRoute/apps/r1']);
    proxies.changed.raise();
    await retried;
    await w.idle();
    expect(store.puts).toEqual(['HTTPRoute/apps/r1', 'HTTPRoute/apps/r1']);
    expect(accepted()).toBe('False');
  });

  it('a new report is written once the snapshot pushes in flight are answered; a refresh of the Gateways does not wait', async () => {
    const store = new Store();
    store.add('Gateway', 'apps', 'edge');
    store.add('HTTPRoute', 'apps', 'r1');
    let answer: (() => void) | undefined;
    const proxies: ProxiesView = {
      changed: new Signal(),
      rejection: () => undefined,
      programmedInput: () => undefined,
      addresses: () => [],
      // As the fleet's answered(): the bound is its own.
      delivered: (maxMs) =>
        new Promise<void>((resolve) => {
          answer = resolve;
          setTimeout(resolve, maxMs).unref();
        }),
    };
    const w = new StatusWriter({ api: store, cache: store.read, controllerName: OURS, isLeader: () => true, metrics: new ControllerMetrics(), log: pino({ level: 'silent' }), proxies });
    const gatewayStatus = (status: 'True' | 'False') => new Map([['apps/edge', { namespace: 'apps', name: 'edge', generation: 1, conditions: [condition('Programmed', status)], listeners: [] }]]);
    const reportWith = (status: 'True' | 'False'): StatusReport => ({
      gatewayClasses: new Map(),
      gateways: gatewayStatus(status),
      httpRoutes: new Map([['apps/r1', { namespace: 'apps', name: 'r1', generation: 1, parents: [{ parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'apps', name: 'edge' }, controllerName: OURS, conditions: [condition('Accepted', 'True')] }] }]]),
      gatewayPolicies: new Map(),
      backendTLSPolicies: new Map(),
    });
    await w.start();
    w.submit(reportWith('True'));
    // Work already due runs (turns of the event loop), and nothing is written while the push is unanswered.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(answer).toBeDefined();
    expect(store.puts).toEqual([]);
    answer!();
    await w.idle();
    expect(store.puts.sort()).toEqual(['Gateway/apps/edge', 'HTTPRoute/apps/r1']);

    // The proxies changed (an ACK): the Gateways are merged again at once, without waiting.
    answer = undefined;
    store.puts.length = 0;
    proxies.changed.raise();
    await w.idle();
    expect(answer).toBeUndefined();

    // A push never answered (a proxy stuck in a long apply) holds the writes a moment, not until it answers.
    w.submit(reportWith('False'));
    await w.idle();
    expect(answer).toBeDefined();
    expect(store.puts).toEqual(['Gateway/apps/edge']);
  });

  it("writes a proxy's NACK, and its end, on the Gateway from the proxies' view, with no new report (no translation)", async () => {
    const api = new FakeApi();
    api.stored = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: 'edge', namespace: 'apps', resourceVersion: '1', generation: 1 } };
    let rejection: Rejection | undefined;
    const proxies: ProxiesView = { changed: new Signal(), rejection: () => rejection, programmedInput: () => undefined, addresses: () => [] };
    const w = new StatusWriter({ api, cache: () => api.stored, controllerName: OURS, isLeader: () => true, metrics: new ControllerMetrics(), log: pino({ level: 'silent' }), proxies });
    const programmed = () => (api.stored.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined)?.find((c) => c.type === 'Programmed');
    await w.start();
    w.submit({
      gatewayClasses: new Map(),
      gateways: new Map([['apps/edge', { namespace: 'apps', name: 'edge', generation: 1, conditions: [{ type: 'Programmed', status: 'False', reason: 'Pending', message: 'waiting', observedGeneration: 1 }], listeners: [] }]]),
      httpRoutes: new Map(),
      gatewayPolicies: new Map(),
      backendTLSPolicies: new Map(),
    });
    await w.idle();
    expect(programmed()).toMatchObject({ status: 'False', reason: 'Pending' });

    rejection = { version: 'v2', pod: 'edge-0', error: 'listener http: port 80 is already in use' };
    proxies.changed.raise();
    await w.idle();
    expect(programmed()).toMatchObject({ status: 'False', reason: 'Invalid', message: 'proxy edge-0 refused snapshot v2: listener http: port 80 is already in use' });

    rejection = undefined;
    proxies.changed.raise();
    await w.idle();
    expect(programmed()).toMatchObject({ status: 'False', reason: 'Pending' });
  });
});
