// The one status writer. Each reconcile hands it the desired status of every object; it
// writes only what differs from the API server, only while this replica leads, one object at a
// time, and retries a conflict on a fresh read. A newer report supersedes an older one in the
// middle of a pass: each object is written from the newest report available. A change of the
// proxies (an ACK, a NACK, a pod ready) with no new report visits the Gateways and ListenerSets
// alone: theirs is the only status that reads the proxies' state.
//
// A pass visits every reported object, and with thousands of routes merging each one's status
// (a JSON comparison of its parents and conditions) would cost tens of milliseconds per
// reconcile while only the route that changed has anything to write.
//
// A write that fails (the API server away or restarting, `429 storage is (re)initializing`
// right after a CRD is installed, a 5xx) is tried again by a later pass, after a backoff that
// doubles from `retry.initialMs` to `retry.maxMs` and is reset by a pass without failures: the
// status of the first reconcile must land even when nothing changes afterwards. So an object whose report
// entry is the same object as at its last check (the translator keeps the status of an
// unchanged route) and whose stored object has the same resourceVersion is known to be
// settled and skipped. A pass runs after the reconcile's own task (whose snapshot push must
// reach the wire first) and yields between slices of work, so that a long first pass does not
// hold up watch events and snapshot acknowledgements.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ControllerMetrics } from '../metrics/metrics.js';
import type { Sink } from '../runtime/channels.js';
import type { Runnable } from '../runtime/runnable.js';
import type { HTTPRouteStatusReport, StatusReport } from '../translate/types.js';
import { changedKeys } from '../translate/key-order.js';
import { compareStrings } from '../translate/keys.js';
import { CONTROLLER_ERRORS } from '../errors.js';
import { RetryBackoff, type RetryOptions } from '../runtime/retry-backoff.js';
import { describeApiError, statusCode } from '../kube/errors.js';
import type { StatusApi, StatusKind } from './api.js';
import { gatewayProgrammed, listenerSetProgrammed } from './programmed.js';
import type { ProxiesView } from './proxies.js';
import { mergeBackendStatus, mergeGatewayClassStatus, mergeGatewayPolicyStatus, mergeGatewayStatus, mergeHTTPRouteStatus, mergeListenerSetStatus, sameStatus } from './merge.js';

const MAX_ATTEMPTS = 5;
/**
 * Shortest time between two passes asked for by status changes alone (recheck()): a writer that
 * keeps taking our entry away gets it back at most once a second, not at the API server's pace.
 */
const RECHECK_GAP_MS = 1000;

const DEFAULT_WRITE_RETRY: RetryOptions = { initialMs: 500, maxMs: 30_000 };
/** A pass gives the event loop a turn after this much work. */
const SLICE_MS = 8;
/** The longest a pass waits for the proxies to answer the snapshot pushes in flight. */
const DELIVERY_WAIT_MS = 250;

/** Reads the informer cache. */
export type CacheReader = (kind: StatusKind, name: string, namespace?: string) => KubernetesObject | undefined;

interface Item {
  readonly kind: StatusKind;
  readonly key: string;
  readonly name: string;
  readonly namespace?: string;
}

type StatusBearing = KubernetesObject & { status?: unknown };

export interface StatusWriterOptions {
  readonly api: StatusApi;
  /** The informer cache the objects are read from (a conflict re-reads through `api`). */
  readonly cache: CacheReader;
  readonly controllerName: string;
  readonly isLeader: () => boolean;
  readonly metrics: ControllerMetrics;
  readonly log: Logger;
  /** The time written as lastTransitionTime (tests). */
  readonly clock?: () => Date;
  /** Gateway Programmed and status.addresses from the proxies, when something runs them (the deployer). */
  readonly proxies?: ProxiesView;
  /** Backoff of a pass with failed writes. */
  readonly retry?: RetryOptions;
  /**
   * What changed in the cache since a pass: with it, a pass checks only the objects whose report
   * entry or cached object changed since the last pass (or were not found settled then); without
   * it, each object is checked.
   */
  readonly cacheChanges?: CacheChanges;
}

/** The cache's changes, per kind. */
export interface CacheChanges {
  /** A number that moves with every change of an object of the kind (added, updated, deleted, listed again). */
  count(kind: StatusKind): number;
  /** The keys (`namespace/name`, or `name`) of the objects changed since `count` was `n`; null: not known (check every object). */
  since(kind: StatusKind, n: number): ReadonlySet<string> | null;
}

export class StatusWriter implements Runnable, Sink<StatusReport> {
  readonly name = 'status-writer';
  readonly needsLeader = true;
  #latest: StatusReport | undefined;
  /**
   * What the next pass visits: every reported object, or only the Gateways and ListenerSets (the
   * objects whose status reads the proxies' state, which is all a refresh changes).
   */
  #dirty: 'none' | 'gateways' | 'all' = 'none';
  #active = false;
  #pass: Promise<void> | undefined;
  /**
   * Our last write per object, until the cache has caught up with it: `before` is the
   * resourceVersion the write replaced. While the cache still shows `before`, the written
   * object is the current one (otherwise every write would be followed by a conflict).
   */
  readonly #written = new Map<string, { kind: StatusKind; key: string; before: string; after: StatusBearing }>();
  /**
   * Per object (not Gateways nor ListenerSets: their status also reads the proxies' state), the report entry
   * and the stored resourceVersion of its last check that left nothing to write. While both
   * are the same, merging again would find nothing either.
   */
  readonly #settled = new Map<StatusKind, Map<string, { entry: object; resourceVersion: string }>>();
  /**
   * Per kind (not Gateways nor ListenerSets), what the last pass that visited it saw: its report
   * map, the cache's change count when it started, and the objects it did not find settled. An
   * object whose entry is the same, whose cached object has not changed since and that was found
   * settled then is settled still: a pass after an endpoint change (the same map of every route's
   * status) skips the kind without a look, and one after a route edit looks at that route alone.
   */
  readonly #visited = new Map<StatusKind, { readonly entries: ReadonlyMap<string, unknown>; readonly count: number; readonly unsettled: ReadonlySet<string> }>();
  /** Objects of the last pass found settled without a merge (tests, debug log). */
  lastPassSkipped = 0;
  /** Objects the last pass looked at one by one (tests): the others were known unchanged from the report map alone. */
  lastPassVisited = 0;
  readonly #retry: RetryBackoff;
  /** The failure last logged, so an API server away for minutes is one line, not one per pass. */
  #lastFailure = '';
  /** A pass asked for by recheck(), waiting out RECHECK_GAP_MS; resolves when it is kicked. */
  #recheck: { readonly timer: NodeJS.Timeout; readonly due: Promise<void>; readonly fire: () => void } | null = null;
  #lastRecheck = -Infinity;

  readonly #o: StatusWriterOptions & { readonly clock: () => Date };

  constructor(options: StatusWriterOptions) {
    this.#o = { ...options, clock: options.clock ?? (() => new Date()) };
    this.#retry = new RetryBackoff(options.retry ?? DEFAULT_WRITE_RETRY);
    // A pod became ready, a proxy ACKed or refused a snapshot: only Gateways change, and
    // nothing translation reads did.
    options.proxies?.changed.listen(() => this.refresh());
  }

  submit(report: StatusReport): void {
    this.#latest = report;
    this.#dirty = 'all';
    this.#kick();
  }

  /**
   * Writes the last report again: what it is merged with changed (a proxy pod became ready, a
   * proxy ACKed a snapshot) while nothing translation reads did.
   */
  refresh(): void {
    if (!this.#latest) return;
    if (this.#dirty === 'none') this.#dirty = 'gateways';
    this.#kick();
  }

  /**
   * An object's status changed in the cache and nothing translation reads did: our own write
   * coming back, or another writer's. No reconcile runs for it; a pass reads the objects whose
   * cached copy changed (cacheChanges) and puts back what was taken away (at most one such pass
   * a second).
   */
  recheck(): void {
    if (!this.#latest || this.#recheck) return;
    let fire!: () => void;
    const due = new Promise<void>((resolve) => (fire = resolve));
    const timer = setTimeout(() => {
      this.#recheck = null;
      this.#lastRecheck = performance.now();
      this.#dirty = 'all';
      this.#kick();
      fire();
    }, Math.max(0, this.#lastRecheck + RECHECK_GAP_MS - performance.now()));
    // Nothing to keep a stopping process for (a follower's writer is never started).
    timer.unref();
    this.#recheck = { timer, due, fire };
  }

  async start(): Promise<void> {
    this.#active = true;
    this.#dirty = this.#latest !== undefined ? 'all' : 'none';
    this.#kick();
  }

  async stop(): Promise<void> {
    this.#active = false;
    this.#retry.cancel();
    if (this.#recheck) {
      clearTimeout(this.#recheck.timer);
      this.#recheck.fire();
      this.#recheck = null;
    }
    await this.#pass;
  }

  /** Resolves when no pass is running nor asked for by recheck() (tests). */
  async idle(): Promise<void> {
    while (this.#pass || this.#recheck) await (this.#pass ?? this.#recheck!.due);
  }

  #kick(): void {
    if (!this.#active || this.#pass || this.#dirty === 'none') return;
    // A pass of every object is the retry a failed one waits for; a pass of the Gateways alone is not.
    if (this.#dirty === 'all') this.#retry.cancel();
    this.#pass = this.#delivered().then(() => this.#run()).finally(() => {
      this.#pass = undefined;
      this.#kick();
    });
  }

  /**
   * What a pass waits for: the snapshot pushes in flight answered, at most DELIVERY_WAIT_MS (a
   * new report comes with a new snapshot, which the proxies apply meanwhile: the writes and the
   * API server's work on them wait rather than take the cores from them; the route's status is
   * then written once it serves), then a turn of the event loop.
   */
  async #delivered(): Promise<void> {
    if (this.#dirty === 'all') await this.#o.proxies?.delivered?.(DELIVERY_WAIT_MS);
    await turn();
  }

  #may(): boolean {
    return this.#active && this.#o.isLeader();
  }

  async #run(): Promise<void> {
    const scope = this.#dirty;
    this.#dirty = 'none';
    const report = this.#latest;
    if (!report) return;
    let checked = 0;
    let visited = 0;
    let written = 0;
    let skipped = 0;
    let failed = 0;
    let firstFailure = '';
    let slice = performance.now();
    for (const group of groupsOf(report, scope === 'all' ? ALL_KINDS : PROXY_KINDS)) {
      const { kind, entries } = group;
      const tracker = this.#o.cacheChanges;
      const count = tracker?.count(kind);
      const last = this.#visited.get(kind);
      this.#visited.delete(kind);
      const changed = last && tracker ? (last.count === count ? NONE : tracker.since(kind, last.count)) : null;
      const known = changed && last;
      if (known && known.entries === entries && changed.size === 0 && known.unsettled.size === 0) {
        checked += entries.size;
        skipped += entries.size;
        this.#visited.set(kind, known);
        continue;
      }
      // The report's map may say which of its keys changed since the map the last pass visited
      // (the routes' status after a route was added among thousands): then only those, the ones
      // the cache changed and the ones left unsettled are looked at, not every key.
      const diff = known ? changedKeys(known.entries, entries) : null;
      const visit = diff && known ? onlyKeys(entries, [diff, changed, known.unsettled]) : entries;
      checked += entries.size - visit.size;
      skipped += entries.size - visit.size;
      visited += visit.size;
      // The objects this pass does not find settled; null once the pass cannot vouch for the others (a newer report came).
      let unsettled: Set<string> | null = settles(kind) ? new Set() : null;
      for (const [key, d] of visit) {
        if (!this.#may()) return;
        checked++;
        if (known && known.entries.get(key) === d && !changed.has(key) && !known.unsettled.has(key)) {
          skipped++;
          continue;
        }
        const item: Item = { kind, key, name: d.name, namespace: d.namespace };
        if (performance.now() - slice > SLICE_MS) {
          await turn();
          slice = performance.now();
          if (!this.#may()) return;
          // A newer report came meanwhile (objects are merged from it): the pass it asks for visits this kind whole.
          if (this.#latest !== report) unsettled = null;
        }
        // Most objects of a pass are settled: told without a merge, and without an await (at
        // thousands of routes, a promise each was half of a pass's time).
        if (this.#isSettled(item)) {
          skipped++;
          continue;
        }
        try {
          const result = await this.#write(item);
          if (result === 'written') written++;
          if (result !== 'settled') unsettled?.add(key);
        } catch (err) {
          unsettled?.add(key);
          this.#o.metrics.statusWrites.inc({ kind: item.kind, result: 'error' });
          const message = describeApiError(err);
          const level = failed === 0 && message !== this.#lastFailure ? 'error' : 'debug';
          if (failed === 0) firstFailure = message;
          failed++;
          this.#o.log[level]({ code: CONTROLLER_ERRORS.statusWrite.code, kind: item.kind, object: item.key, err: message }, 'status write failed');
        }
      }
      if (unsettled && count !== undefined && this.#latest === report) this.#visited.set(kind, { entries, count, unsettled });
      // Objects gone from the report (deleted) are never read again: forget what was settled of
      // them, or routes created and deleted over days would each leave an entry here.
      const settled = this.#settled.get(kind);
      if (scope === 'all' && settled) for (const key of diff ?? settled.keys()) if (!entries.has(key)) settled.delete(key);
    }
    this.lastPassSkipped = skipped;
    this.lastPassVisited = visited;
    if (scope !== 'all') {
      // A pass of the Gateways alone: its failures are retried by a pass of every object, and its
      // success says nothing of the others'.
      if (failed) this.#afterPass(failed, checked, firstFailure);
      this.#o.log.debug({ checked, written, skipped }, 'status pass of the Gateways finished');
      return;
    }
    this.#afterPass(failed, checked, firstFailure);
    // Our writes to objects gone from the report are forgotten too.
    for (const [key, w] of this.#written) if (!reportMap(report, w.kind)?.has(w.key)) this.#written.delete(key);
    this.#o.log.debug({ checked, written, skipped }, 'status pass finished');
  }

  /** A pass with failures is followed by another after the backoff; one without resets it. */
  #afterPass(failed: number, checked: number, firstFailure: string): void {
    if (failed === 0) {
      if (this.#lastFailure) this.#o.log.info('status writes succeed again');
      this.#lastFailure = '';
      this.#retry.succeeded();
      return;
    }
    const retryInMs = this.#retry.failed(() => {
      this.#dirty = 'all';
      this.#kick();
    });
    if (firstFailure !== this.#lastFailure) {
      this.#o.log.warn({ code: CONTROLLER_ERRORS.statusWrite.code, failed, checked, retryInMs }, `${failed} of ${checked} status writes failed (${firstFailure}); retrying`);
    }
    this.#lastFailure = firstFailure;
  }

  /** Writes remembered until the cache shows them (tests). */
  get remembered(): number {
    return this.#written.size;
  }

  #current(item: Item): StatusBearing | undefined {
    const cached = this.#o.cache(item.kind, item.name, item.namespace);
    const key = writtenKey(item);
    const w = this.#written.get(key);
    if (w && cached && cached.metadata?.resourceVersion === w.before) return w.after;
    if (w) this.#written.delete(key);
    return cached;
  }

  #desired(item: Item, current: unknown): Record<string, unknown> | undefined {
    const r = this.#latest!;
    const now = this.#o.clock();
    switch (item.kind) {
      case 'GatewayClass': {
        const d = r.gatewayClasses.get(item.key);
        return d && mergeGatewayClassStatus(current, d, now);
      }
      case 'Gateway': {
        const d = r.gateways.get(item.key);
        const p = this.#o.proxies;
        return d && mergeGatewayStatus(current, p ? gatewayProgrammed(d, p) : d, now, p?.addresses(d.namespace, d.name));
      }
      case 'ListenerSet': {
        const d = r.listenerSets?.get(item.key);
        const p = this.#o.proxies;
        return d && mergeListenerSetStatus(current, p ? listenerSetProgrammed(d, p) : d, now);
      }
      case 'HTTPRoute':
      case 'GRPCRoute': {
        // A GRPCRoute's status has an HTTPRoute's shape (status.parents): merged the same way.
        const d = this.#entry(item) as HTTPRouteStatusReport | undefined;
        return d && mergeHTTPRouteStatus(current, d, this.#o.controllerName, now);
      }
      case 'TLSRoute': {
        // status.parents, as an HTTPRoute's.
        const d = r.tlsRoutes?.get(item.key);
        return d && mergeHTTPRouteStatus(current, d, this.#o.controllerName, now);
      }
      case 'GatewayPolicy': {
        const d = r.gatewayPolicies.get(item.key);
        return d && mergeGatewayPolicyStatus(current, d, this.#o.controllerName, now);
      }
      case 'Backend': {
        const d = r.backends?.get(item.key);
        return d && mergeBackendStatus(current, d, now);
      }
      case 'BackendTLSPolicy': {
        // The same shape as a GatewayPolicy's: status.ancestors, other controllers' entries kept.
        const d = r.backendTLSPolicies.get(item.key);
        return d && mergeGatewayPolicyStatus(current, d, this.#o.controllerName, now);
      }
    }
  }

  /** The report entry an object's status is merged from (the settled check compares it by identity); none for the kinds never known settled. */
  #entry(item: Item): object | undefined {
    return settles(item.kind) ? reportMap(this.#latest!, item.kind)?.get(item.key) : undefined;
  }

  /** Whether the object is known to need nothing without merging: the report entry and the stored object of its last check. */
  #isSettled(item: Item): boolean {
    const settled = this.#settled.get(item.kind)?.get(item.key);
    if (!settled || settled.entry !== this.#entry(item)) return false;
    const obj = this.#current(item);
    return obj !== undefined && settled.resourceVersion === obj.metadata?.resourceVersion;
  }

  /** `settled`: merged, nothing to write, and known settled (not a Gateway's); `same`: nothing written otherwise. */
  async #write(item: Item): Promise<'written' | 'settled' | 'same'> {
    let obj = this.#current(item);
    const settledOf = () => {
      let m = this.#settled.get(item.kind);
      if (!m) this.#settled.set(item.kind, (m = new Map<string, { entry: object; resourceVersion: string }>()));
      return m;
    };
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      if (!obj) return 'same'; // deleted meanwhile: nothing to report on
      // Read with the merge, synchronously: a newer report may have arrived during an await.
      const entry = this.#entry(item);
      const status = this.#desired(item, obj.status);
      if (!status || sameStatus(obj.status, status)) {
        if (!entry || !status) return 'same';
        settledOf().set(item.key, { entry, resourceVersion: obj.metadata?.resourceVersion ?? '' });
        return 'settled';
      }
      this.#settled.get(item.kind)?.delete(item.key);
      if (!this.#may()) return 'same';
      try {
        const stored = (await this.#o.api.replaceStatus(item.kind, { ...obj, status } as KubernetesObject)) as StatusBearing;
        this.#written.set(writtenKey(item), { kind: item.kind, key: item.key, before: obj.metadata?.resourceVersion ?? '', after: stored });
        this.#o.metrics.statusWrites.inc({ kind: item.kind, result: 'written' });
        this.#o.log.debug({ kind: item.kind, object: item.key }, 'status written');
        return 'written';
      } catch (err) {
        const code = statusCode(err);
        if (code === 404) {
          this.#o.metrics.statusWrites.inc({ kind: item.kind, result: 'not_found' });
          return 'same';
        }
        if (code !== 409) throw err;
        this.#o.metrics.statusWrites.inc({ kind: item.kind, result: 'conflict' });
        this.#o.log.debug({ kind: item.kind, object: item.key, attempt }, 'status conflict; re-reading');
        obj = (await this.#o.api.get(item.kind, item.name, item.namespace));
      }
    }
    throw new Error(`still conflicting after ${MAX_ATTEMPTS} attempts`);
  }
}

/** One turn of the event loop: I/O already due (a snapshot push, watch events) goes first. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The entries of `entries` whose key is in one of `keys`, in key order. */
function onlyKeys<V>(entries: ReadonlyMap<string, V>, keys: readonly Iterable<string>[]): ReadonlyMap<string, V> {
  const wanted = new Set<string>();
  for (const list of keys) for (const k of list) if (entries.has(k)) wanted.add(k);
  return new Map([...wanted].sort(compareStrings).map((k) => [k, entries.get(k)!] as const));
}

/** The report's objects of one kind, by key. */
interface Group {
  readonly kind: StatusKind;
  readonly entries: ReadonlyMap<string, { readonly name: string; readonly namespace?: string }>;
}

/** The report's map of a kind. */
function reportMap(r: StatusReport, kind: StatusKind): Group['entries'] | undefined {
  switch (kind) {
    case 'GatewayClass':
      return r.gatewayClasses;
    case 'Gateway':
      return r.gateways;
    case 'ListenerSet':
      return r.listenerSets;
    case 'HTTPRoute':
      return r.httpRoutes;
    case 'GRPCRoute':
      return r.grpcRoutes;
    case 'TLSRoute':
      return r.tlsRoutes;
    case 'GatewayPolicy':
      return r.gatewayPolicies;
    case 'Backend':
      return r.backends;
    case 'BackendTLSPolicy':
      return r.backendTLSPolicies;
  }
}

/** Whether the writer may know an object of the kind settled: not a Gateway's nor a ListenerSet's (they read the proxies' state). */
function settles(kind: StatusKind): boolean {
  return !PROXY_KINDS.includes(kind);
}

const NONE: ReadonlySet<string> = new Set();

/** The kinds a pass of every object visits, in order. */
const ALL_KINDS: readonly StatusKind[] = ['GatewayClass', 'Gateway', 'ListenerSet', 'HTTPRoute', 'GRPCRoute', 'TLSRoute', 'GatewayPolicy', 'Backend', 'BackendTLSPolicy'];
/** The kinds whose status reads the proxies' state: all a pass after a change of the proxies visits. */
const PROXY_KINDS: readonly StatusKind[] = ['Gateway', 'ListenerSet'];

function groupsOf(r: StatusReport, kinds: readonly StatusKind[]): Group[] {
  return kinds.flatMap((kind) => {
    const entries = reportMap(r, kind);
    return entries ? [{ kind, entries }] : [];
  });
}

function writtenKey(item: Item): string {
  return `${item.kind}/${item.key}`;
}
