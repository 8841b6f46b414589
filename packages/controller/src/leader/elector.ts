// Leader election on a coordination.k8s.io/v1 Lease, the protocol client-go uses:
// - a candidate takes the Lease when it is free (no holder) or expired: its record did not
//   change for leaseDuration, measured on this replica's own clock from when it last saw the
//   record change (so clock skew between replicas does not matter);
// - the leader renews every retryPeriod; updates carry the resourceVersion read, so two
//   candidates cannot both win;
// - leadership is judged on demand (isLeader): it ends renewDeadline after the last
//   successful renewal even if the renewal loop is late, which is before any follower may
//   take over (renewDeadline < leaseDuration). Writes check it right before each call;
// - on stop, the leader releases the Lease (empty holder) so a follower takes over at once.
// The Helm chart owns the Lease (created free with the release, deleted by helm uninstall), so
// a reinstall never waits for a Lease its previous controller could not release; without the
// chart the controller creates it when missing.
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { LeaderElection } from '../options.js';
import type { LeadershipSource } from '../runtime/manager.js';
import type { Runnable } from '../runtime/runnable.js';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError, statusCode } from '../kube/errors.js';

export interface LeaseApi {
  read(namespace: string, name: string): Promise<V1Lease | undefined>;
  create(namespace: string, lease: V1Lease): Promise<V1Lease>;
  replace(namespace: string, name: string, lease: V1Lease): Promise<V1Lease>;
}

export class KubeLeaseApi implements LeaseApi {
  readonly #api: CoordinationV1Api;
  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(CoordinationV1Api);
  }
  async read(namespace: string, name: string): Promise<V1Lease | undefined> {
    try {
      return await this.#api.readNamespacedLease({ namespace, name });
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }
  create(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.#api.createNamespacedLease({ namespace, body: lease });
  }
  replace(namespace: string, name: string, lease: V1Lease): Promise<V1Lease> {
    return this.#api.replaceNamespacedLease({ namespace, name, body: lease });
  }
}

/** Always leader: a single replica without --leader-elect. */
export class NoElection implements LeadershipSource {
  isLeader(): boolean {
    return true;
  }
  onChange(): void {}
}

export class LeaseElector implements LeadershipSource, Runnable {
  readonly name = 'leader-election';
  readonly needsLeader = false;
  readonly #listeners: ((leader: boolean) => void)[] = [];
  #leading = false;
  /** performance.now() of the last successful acquire or renew. */
  #renewedAt = -Infinity;
  /** The record last seen and when it was first seen (monotonic ms). */
  #observed: { key: string; at: number } | undefined;
  #lease: V1Lease | undefined;
  #timer: NodeJS.Timeout | undefined;
  #loop: Promise<void> | undefined;
  #stopped = true;
  #deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly api: LeaseApi,
    private readonly namespace: string,
    private readonly cfg: LeaderElection,
    private readonly log: Logger,
    private readonly now: () => number = () => performance.now(),
  ) {}

  isLeader(): boolean {
    return this.#leading && this.now() - this.#renewedAt < this.cfg.renewDeadlineMs;
  }

  onChange(listener: (leader: boolean) => void): void {
    this.#listeners.push(listener);
  }

  /** The Lease as last read or written. */
  get lease(): V1Lease | undefined {
    return this.#lease;
  }

  get identity(): string {
    return this.cfg.identity;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#loop = this.#tick().finally(() => {
        this.#loop = undefined;
      });
    }, ms);
  }

  async #tick(): Promise<void> {
    let ok = false;
    try {
      ok = await this.#tryAcquireOrRenew();
    } catch (err) {
      this.log.warn({ code: CONTROLLER_ERRORS.leaseFailed.code, err: describeApiError(err) }, 'leader election: Lease request failed');
    }
    if (this.#stopped) return;
    if (ok) {
      this.#renewedAt = this.now();
      if (!this.#leading) this.#set(true);
      this.#armDeadline();
    } else if (this.#leading && this.now() - this.#renewedAt >= this.cfg.renewDeadlineMs) {
      this.#set(false);
    } else if (this.#leading && this.#lease && this.#lease.spec?.holderIdentity !== this.cfg.identity) {
      this.#set(false);
    }
    this.#schedule(this.cfg.retryPeriodMs * (this.#leading ? 1 : 0.9 + Math.random() * 0.2));
  }

  /** Steps down renewDeadline after the last renewal even while a Lease request hangs. */
  #armDeadline(): void {
    if (this.#deadline) clearTimeout(this.#deadline);
    this.#deadline = setTimeout(() => {
      this.#deadline = undefined;
      if (this.#leading && !this.isLeader()) this.#set(false);
    }, this.cfg.renewDeadlineMs + 1);
  }

  #set(leading: boolean): void {
    this.#leading = leading;
    this.log.info({ identity: this.cfg.identity, lease: `${this.namespace}/${this.cfg.leaseName}` }, leading ? 'became leader' : 'lost leadership');
    for (const l of this.#listeners) l(leading);
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    // MicroTime: the API server wants six fractional digits.
    const nowIso = new V1MicroTime();
    const lease = await this.api.read(this.namespace, this.cfg.leaseName);
    const durationS = Math.ceil(this.cfg.leaseDurationMs / 1000);
    if (!lease) {
      const created = await this.api.create(this.namespace, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.cfg.leaseName, namespace: this.namespace },
        spec: { holderIdentity: this.cfg.identity, leaseDurationSeconds: durationS, acquireTime: nowIso, renewTime: nowIso, leaseTransitions: 0 },
      }).catch((err: unknown) => {
        const code = statusCode(err);
        if (code === 409) return undefined; // another candidate created it first
        // The chart makes the Lease with the release and grants no create: said plainly, as
        // this repeats every retry period until the Lease is there.
        if (code === 403) throw new Error(`the Lease ${this.namespace}/${this.cfg.leaseName} does not exist and this controller may not create it (${describeApiError(err, 200)}); the Helm chart creates it with the release (helm upgrade --install puts it back)`);
        throw err;
      });
      this.#lease = created;
      return created !== undefined;
    }
    this.#lease = lease;
    const spec = lease.spec ?? {};
    const key = JSON.stringify([spec.holderIdentity, String(spec.renewTime), lease.metadata?.resourceVersion]);
    const t = this.now();
    if (this.#observed?.key !== key) this.#observed = { key, at: t };
    const holder = spec.holderIdentity ?? '';
    const mine = holder === this.cfg.identity;
    const expired = t - this.#observed.at >= this.cfg.leaseDurationMs;
    if (!mine && holder !== '' && !expired) return false;
    const updated = await this.api
      .replace(this.namespace, this.cfg.leaseName, {
        ...lease,
        spec: {
          ...spec,
          holderIdentity: this.cfg.identity,
          leaseDurationSeconds: durationS,
          renewTime: nowIso,
          acquireTime: mine ? spec.acquireTime : nowIso,
          leaseTransitions: mine ? spec.leaseTransitions ?? 0 : (spec.leaseTransitions ?? 0) + 1,
        },
      })
      .catch((err: unknown) => {
        if (statusCode(err) === 409) return undefined;
        throw err;
      });
    if (!updated) return false;
    this.#lease = updated;
    this.#observed = { key: JSON.stringify([updated.spec?.holderIdentity, String(updated.spec?.renewTime), updated.metadata?.resourceVersion]), at: this.now() };
    return true;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#deadline) clearTimeout(this.#deadline);
    await this.#loop;
    if (!this.#leading) return;
    this.#set(false);
    // Release: an empty holder lets a follower take over without waiting for expiry.
    try {
      const lease = await this.api.read(this.namespace, this.cfg.leaseName);
      if (lease?.spec?.holderIdentity === this.cfg.identity) {
        await this.api.replace(this.namespace, this.cfg.leaseName, { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime() } });
        this.log.info('released the leader Lease');
      }
    } catch (err) {
      this.log.warn({ err: describeApiError(err) }, 'could not release the leader Lease; followers take over when it expires');
    }
  }
}
