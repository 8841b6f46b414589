// The informers of every watched kind, read together as translate()'s Resources. Objects that
// fail the shape checks are left out and logged once per resourceVersion.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import type { Resources } from '../translate/types.js';
import { unreadable } from './decode.js';
import { Informer, type BackoffOptions, type InformerEvents } from './informer.js';
import { KINDS, type WatchedKind } from './kinds.js';

export class World {
  readonly informers: ReadonlyMap<string, Informer>;
  /** `<kind>/<ns>/<name>@<resourceVersion>` already reported as unreadable. */
  readonly #reported = new Set<string>();

  constructor(
    kc: KubeConfig,
    events: InformerEvents,
    private readonly log: Logger,
    backoff?: BackoffOptions,
    private readonly onUnreadable: (kind: WatchedKind, obj: KubernetesObject, why: string) => void = () => undefined,
  ) {
    this.informers = new Map(KINDS.map((k) => [k.kind, new Informer(k, kc, events, log, backoff)]));
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
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  informer(kind: string): Informer {
    return this.informers.get(kind)!;
  }

  /** The cached object, for the status writer (which needs its resourceVersion and status). */
  get(kind: string, name: string, namespace?: string): KubernetesObject | undefined {
    return this.informer(kind).get(name, namespace);
  }

  resources(): Resources {
    const out: Record<string, KubernetesObject[]> = {};
    const seen = new Set<string>();
    for (const inf of this.informers.values()) out[inf.kind.resources] = inf.list().filter((o) => this.#readable(inf.kind, o, seen));
    // Forget reports of objects that were fixed or deleted, so the set does not grow forever.
    for (const key of this.#reported) if (!seen.has(key)) this.#reported.delete(key);
    return out as unknown as Resources;
  }

  #readable(kind: WatchedKind, obj: KubernetesObject, seen: Set<string>): boolean {
    const why = unreadable(kind, obj);
    if (why === undefined) return true;
    const id = `${kind.kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}@${obj.metadata?.resourceVersion ?? ''}`;
    seen.add(id);
    if (!this.#reported.has(id)) {
      this.#reported.add(id);
      this.log.warn({ code: CONTROLLER_ERRORS.objectUnreadable.code, kind: kind.kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name, resourceVersion: obj.metadata?.resourceVersion, reason: why }, `skipping ${kind.kind} that cannot be read: ${why}`);
      this.onUnreadable(kind, obj, why);
    }
    return false;
  }
}
