// The informers of every watched kind, read together as translate()'s Resources. Objects that
// fail the shape checks are left out and logged once per resourceVersion. Of the kinds cached
// as metadata (Secrets, ConfigMaps), translation gets the objects Gateways, GatewayClasses and
// GatewayPolicies reference, read whole (referenced.ts); until each of those that exists has
// been read once, resources() answers undefined and the reconcile waits.
import type { RetryOptions } from '../runtime/retry-backoff.js';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import type { CacheStat } from '../metrics/metrics.js';
import { matchesSelector } from '../translate/policy-refs.js';
import type { ReferencedKeys, ReferencingObjects, SecretSelection } from '../translate/references.js';
import type { Resources } from '../translate/types.js';
import type { ChangeLog } from './change-log.js';
import { unreadable } from './decode.js';
import { Informer, type InformerEvents } from './informer.js';
import { KINDS, type WatchedKind } from './kinds.js';
import { ReferencedObjects } from './referenced.js';
import { ReadableLists, readableOf } from './readable-lists.js';

export class World {
  readonly informers: ReadonlyMap<string, Informer>;
  /** The whole objects of the metadata-only kinds, by kind. */
  readonly #referenced: ReadonlyMap<string, ReferencedObjects>;
  /** `<kind>/<ns>/<name>@<resourceVersion>` already reported as unreadable. */
  readonly #reported = new Set<string>();
  /** The policies' secretSelectors of the last reconcile, by namespace. */
  #selectors = new Map<string, SecretSelection[]>();
  /** By kind, the lists resources() handed out (the kinds cached whole). */
  readonly #lists = new ReadableLists<KubernetesObject>();

  constructor(
    kc: KubeConfig,
    events: InformerEvents,
    private readonly log: Logger,
    /** What translation will read whole of the metadata-only kinds (translate/references.ts). */
    private readonly references: (r: ReferencingObjects) => ReferencedKeys,
    backoff?: RetryOptions,
    private readonly onUnreadable: (kind: WatchedKind, obj: KubernetesObject, why: string) => void = () => undefined,
  ) {
    const informers = new Map<string, Informer>();
    const referenced = new Map<string, ReferencedObjects>();
    for (const k of KINDS) {
      if (k.cache.form === 'full') {
        informers.set(k.kind, new Informer(k, kc, events, log, backoff));
        continue;
      }
      const version = (ns: string, name: string) => informers.get(k.kind)!.get(name, ns)?.metadata?.resourceVersion;
      const objects = new ReferencedObjects(k.kind, k.cache.fetch(kc), version, () => events.changed(k), log);
      referenced.set(k.kind, objects);
      // Only a referenced object's change can change a translation, or a Secret a policy's
      // selector chooses (now, or by its new labels): a tenant creating or rewriting Secrets
      // nothing uses costs no reconcile.
      informers.set(k.kind, new Informer(k, kc, events, log, backoff, (o) => objects.wants(o.metadata?.namespace ?? '', o.metadata?.name ?? '') || (k.kind === 'Secret' && this.#selected(o))));
    }
    this.informers = informers;
    this.#referenced = referenced;
  }

  get synced(): boolean {
    return [...this.informers.values()].every((i) => i.synced);
  }

  unsynced(): string[] {
    return [...this.informers.values()].filter((i) => !i.synced).map((i) => i.kind.kind);
  }

  async start(): Promise<void> {
    // Concurrently: the first list of each kind is independent of the others.
    await Promise.all([...this.informers.values()].map((i) => i.start()));
  }

  async stop(): Promise<void> {
    for (const r of this.#referenced.values()) r.stop();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  informer(kind: string): Informer {
    return this.informers.get(kind)!;
  }

  /** What each cache holds, for the metrics. */
  cacheStats(): CacheStat[] {
    const stats: CacheStat[] = [];
    for (const i of this.informers.values()) {
      const referenced = this.#referenced.get(i.kind.kind);
      if (referenced) {
        stats.push({ kind: i.kind.kind, form: 'metadata', objects: i.list().length, dataBytes: 0 });
        const held = referenced.held();
        stats.push({ kind: i.kind.kind, form: 'full', objects: held.length, dataBytes: held.reduce((n, o) => n + dataBytes(o), 0) });
      } else {
        const objects = i.list();
        stats.push({ kind: i.kind.kind, form: 'full', objects: objects.length, dataBytes: objects.reduce((n, o) => n + dataBytes(o), 0) });
      }
    }
    return stats;
  }

  /** The cached object (whole: of a metadata-only kind, only a referenced one), for the status writer and the parameters. */
  get(kind: string, name: string, namespace?: string): KubernetesObject | undefined {
    const referenced = this.#referenced.get(kind);
    if (referenced) return referenced.get(namespace ?? '', name);
    return this.informer(kind).get(name, namespace);
  }

  /** What changed in the cache of a kind (the status writer's CacheChanges). */
  changes(kind: string): ChangeLog {
    return this.informer(kind).changes;
  }

  /** translate()'s input; undefined while a referenced object is being read for the first time. */
  resources(): Resources | undefined {
    const out: Record<string, readonly KubernetesObject[]> = {};
    const seen = new Set<string>();
    for (const inf of this.informers.values()) {
      if (this.#referenced.has(inf.kind.kind)) continue;
      out[inf.kind.resources] = this.#lists.list(inf.kind.kind, inf.changes.count, () => inf.list(), (o) => this.#readable(inf.kind, o), seen);
    }
    const partial = out as unknown as Resources;
    const keys = this.references({
      gatewayClasses: partial.gatewayClasses,
      gateways: partial.gateways,
      referenceGrants: partial.referenceGrants,
      gatewayPolicies: partial.gatewayPolicies,
      backends: partial.backends,
      backendTLSPolicies: partial.backendTLSPolicies,
      secrets: this.informer('Secret').list(),
    });
    this.#selectors = new Map();
    for (const s of keys.secretSelectors) this.#selectors.set(s.namespace, [...(this.#selectors.get(s.namespace) ?? []), s]);
    let pending = false;
    for (const [kind, referenced] of this.#referenced) {
      const inf = this.informer(kind);
      const r = referenced.want(kind === 'Secret' || kind === 'ConfigMap' ? keys[kind] : []);
      pending ||= r.pending;
      out[inf.kind.resources] = readableOf(r.objects, (o) => this.#readable(inf.kind, o), (id) => seen.add(id));
    }
    // Forget reports of objects that were fixed or deleted, so the set does not grow forever.
    for (const key of this.#reported) if (!seen.has(key)) this.#reported.delete(key);
    return pending ? undefined : partial;
  }

  /** Whether a policy's secretSelector of the last reconcile chooses the Secret (by the labels the cache holds). */
  #selected(o: KubernetesObject): boolean {
    const selectors = this.#selectors.get(o.metadata?.namespace ?? '');
    return selectors?.some((s) => matchesSelector(s.matchLabels, o.metadata?.labels)) ?? false;
  }

  /** null when the object can be read; else its id (`<kind>/<ns>/<name>@<resourceVersion>`), reported once. */
  #readable(kind: WatchedKind, obj: KubernetesObject): string | null {
    const why = verdict(kind, obj);
    if (why === null) return null;
    const id = `${kind.kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}@${obj.metadata?.resourceVersion ?? ''}`;
    if (!this.#reported.has(id)) {
      this.#reported.add(id);
      this.log.warn({ code: CONTROLLER_ERRORS.objectUnreadable.code, kind: kind.kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name, resourceVersion: obj.metadata?.resourceVersion, reason: why }, `skipping ${kind.kind} that cannot be read: ${why}`);
      this.onUnreadable(kind, obj, why);
    }
    return id;
  }
}

/**
 * Why a cached object cannot be read (null: it can), by object: the cache replaces an object
 * that changes and never changes one in place, so each is checked once, not at every reconcile
 * (thousands of routes were checked again for each endpoint change).
 */
const verdicts = new WeakMap<KubernetesObject, string | null>();

function verdict(kind: WatchedKind, obj: KubernetesObject): string | null {
  let why = verdicts.get(obj);
  if (why === undefined) verdicts.set(obj, (why = unreadable(kind, obj) ?? null));
  return why;
}

/** Bytes of an object's `data` and `binaryData` values (as held: base64 for Secrets and binaryData). */
export function dataBytes(o: KubernetesObject): number {
  const { data, binaryData } = o as { data?: Record<string, string>; binaryData?: Record<string, string> };
  let n = 0;
  for (const map of [data, binaryData]) for (const v of Object.values(map ?? {})) n += typeof v === 'string' ? v.length : 0;
  return n;
}
