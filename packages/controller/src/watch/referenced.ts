// The whole objects of a metadata-only kind that translation needs: the Secrets listeners
// reference, the ConfigMaps parametersRefs name. The cache of the kind holds every object's
// metadata (metadata-watch.ts); each reconcile says which keys it wants (want()), and this
// reads those objects one by one, keeps them while they are wanted and reads one again when
// its metadata shows a new resourceVersion. Memory follows what Gateways reference, not what
// tenants create.
//
// A wanted object that exists but was never read holds the reconcile back (want() says
// pending) until its first read answers, so a restarted controller never sends proxies a
// snapshot without a certificate it merely had not read yet. A changed object does not hold
// anything back: translation uses the copy it has and runs again when the new one arrives. A
// failed read is retried with a backoff and holds nothing back either.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';

/** Reads one object; undefined when it does not exist (or no longer passes the kind's selectors). */
export type FetchObject = (namespace: string, name: string) => Promise<KubernetesObject | undefined>;

export interface ReferencedLimits {
  /** Reads at once; more wait their turn. */
  readonly concurrency: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /** A read not answered by then counts as failed: a hung request never holds a reconcile back. */
  readonly readTimeoutMs: number;
}

const DEFAULT_LIMITS: ReferencedLimits = { concurrency: 8, retryInitialMs: 1000, retryMaxMs: 30_000, readTimeoutMs: 10_000 };

interface Copy {
  readonly object: KubernetesObject | undefined;
  /** The metadata's resourceVersion when the read started: a newer one means read again. */
  readonly seen: string;
}

export interface WantResult {
  readonly objects: readonly KubernetesObject[];
  /** An existing object was never read yet: the reconcile waits for it. */
  readonly pending: boolean;
}

export class ReferencedObjects {
  /** `<namespace>/<name>` -> the last read (also of an object found missing). */
  readonly #copies = new Map<string, Copy>();
  /** Keys wanted by the last reconcile. */
  #wanted = new Set<string>();
  readonly #queue: string[] = [];
  readonly #reading = new Set<string>();
  /** Keys whose last read failed -> the delay before the retry (doubling until a read answers). */
  readonly #failed = new Map<string, number>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #stopped = false;

  constructor(
    readonly kind: string,
    private readonly fetch: FetchObject,
    /** The resourceVersion the metadata cache holds for the object; undefined: it does not exist. */
    private readonly version: (namespace: string, name: string) => string | undefined,
    /** A read answered with something new: reconcile again. */
    private readonly loaded: () => void,
    private readonly log: Logger,
    private readonly limits: ReferencedLimits = DEFAULT_LIMITS,
  ) {}

  /** The wanted objects as read so far; starts the reads that are due. */
  want(keys: Iterable<string>): WantResult {
    this.#wanted = new Set(keys);
    for (const k of this.#copies.keys()) if (!this.#wanted.has(k)) this.#copies.delete(k);
    for (const k of this.#failed.keys()) if (!this.#wanted.has(k)) this.#forgetFailure(k);
    const objects: KubernetesObject[] = [];
    let pending = false;
    for (const k of [...this.#wanted].sort()) {
      const [namespace, name] = split(k);
      const version = this.version(namespace, name);
      const copy = this.#copies.get(k);
      if (version === undefined) {
        // Gone (the metadata watch said so): nothing to read.
        this.#copies.delete(k);
        continue;
      }
      if (copy?.object) objects.push(copy.object);
      if (copy?.seen === version) continue;
      if (!copy && !this.#failed.has(k)) pending = true;
      this.#schedule(k);
    }
    return { objects, pending };
  }

  /** Whether the last reconcile wanted the object (its change matters). */
  wants(namespace: string, name: string): boolean {
    return this.#wanted.has(`${namespace}/${name}`);
  }

  get(namespace: string, name: string): KubernetesObject | undefined {
    return this.#copies.get(`${namespace}/${name}`)?.object;
  }

  /** The objects held whole. */
  held(): KubernetesObject[] {
    return [...this.#copies.values()].flatMap((c) => (c.object ? [c.object] : []));
  }

  stop(): void {
    this.#stopped = true;
    for (const k of [...this.#failed.keys()]) this.#forgetFailure(k);
    this.#queue.length = 0;
  }

  #forgetFailure(key: string): void {
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    this.#failed.delete(key);
  }

  #schedule(key: string): void {
    if (this.#stopped || this.#reading.has(key) || this.#timers.has(key) || this.#queue.includes(key)) return;
    this.#queue.push(key);
    this.#pump();
  }

  #pump(): void {
    while (!this.#stopped && this.#reading.size < this.limits.concurrency && this.#queue.length) {
      const key = this.#queue.shift()!;
      if (!this.#wanted.has(key)) continue;
      this.#reading.add(key);
      void this.#read(key).finally(() => {
        this.#reading.delete(key);
        this.#pump();
      });
    }
  }

  async #read(key: string): Promise<void> {
    const [namespace, name] = split(key);
    const seen = this.version(namespace, name);
    if (seen === undefined) return;
    let object: KubernetesObject | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${this.limits.readTimeoutMs} ms`)), this.limits.readTimeoutMs);
      });
      object = await Promise.race([this.fetch(namespace, name), timeout]);
    } catch (err) {
      if (this.#stopped || !this.#wanted.has(key)) return;
      const first = !this.#failed.has(key);
      const ms = first ? this.limits.retryInitialMs : Math.min(this.#failed.get(key)! * 2, this.limits.retryMaxMs);
      this.#failed.set(key, ms);
      // One line per first failure; the retries of an API server that stays away say nothing new.
      if (first) this.log.warn({ code: CONTROLLER_ERRORS.watchFailed.code, kind: this.kind, namespace, name, err: describeApiError(err, 300), retryInMs: ms }, `could not read ${this.kind} ${key}; retrying`);
      const timer = setTimeout(() => {
        this.#timers.delete(key);
        this.#schedule(key);
      }, ms);
      timer.unref();
      this.#timers.set(key, timer);
      // Nothing read yet: the reconcile held back for it goes on without it.
      if (first && !this.#copies.has(key)) this.loaded();
      return;
    } finally {
      clearTimeout(timer);
    }
    this.#forgetFailure(key);
    if (this.#stopped || !this.#wanted.has(key)) return;
    this.#copies.set(key, { object, seen });
    this.loaded();
  }
}

function split(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
