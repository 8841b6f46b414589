// The deployer: keeps the proxies of every Gateway of our class running. Leader only, like
// the status writer. Each reconcile hands it the Gateways it serves; a pass renders each one,
// applies what changed (server-side apply, field manager `tollgate`) and deletes the objects
// carrying its labels that no Gateway needs any more (a deleted Gateway, a Gateway moved to
// another class). Objects also carry an ownerReference to their Gateway, so a cluster's
// garbage collector removes them with it even when no controller runs.
//
// One pass at a time; a newer set of Gateways supersedes an older one. An object is applied
// when its rendering changed since the last successful apply, when the listing at the start
// of the pass shows it missing, or when the watch of the owned objects (owned-watch.ts) saw it
// deleted or changed by someone else: a pass starts at once and puts it back. A pass with a
// failure (API server away, a refused object) is retried with a backoff even if nothing
// changes, so a quiet cluster does not wait for an unrelated change to heal.
//
// Every reconcile submits, most for a change that renders nothing new (a route added). A pass
// that wants what the last one left in place, while the watch of the owned objects held and
// told of no one else's change since (watchEpoch, observed()), does nothing: no listing.
//
// A Gateway refused for its parameters (a bad parametersRef) is kept as it runs: its objects
// are neither applied nor pruned, so a typo in a parameters ConfigMap never takes proxies away.
//
// It never takes over an object it did not make. An object it owns carries its labels and the
// Gateway's name (listOwned); before creating one, it checks the name is free. A name taken by
// someone else's object (or by another Gateway's proxies: `a-b` of class `c` and `a` of class
// `b-c` share `a-b-c`) is a conflict: nothing of that Gateway is applied or pruned, the
// Gateway's Programmed condition says which object and why (conflict()), and the pass is
// retried with the backoff until the name is free. The chart's ValidatingAdmissionPolicy
// refuses the same takeover at the API server, for the moment between the check and the apply.
//
// A Gateway's Service whose requested address (spec.addresses) is not the one it has is
// deleted and created again: a ClusterIP cannot change in place. The API server's refusal of a
// requested address is the Gateway owner's to fix, not a failure of ours: addressRefusal()
// says it until an apply succeeds (Programmed False, AddressNotUsable), it is logged once, and
// the pass is retried with the backoff, so an address freed meanwhile is taken.
import { createHash } from 'node:crypto';
import type { KubernetesObject, V1Service } from '@kubernetes/client-node';
import { addressRefusal, type AddressRefusal } from './addresses.js';
import { COMPONENT, COMPONENT_LABEL, GATEWAY_NAME_LABEL, MANAGED_BY, MANAGED_BY_LABEL, proxyName } from './names.js';
import type { OwnedEvent } from './owned-watch.js';
import type { ProxySettings } from '../proxy-settings/overrides.js';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { RetryBackoff, type RetryOptions } from '../runtime/retry-backoff.js';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import type { Gateway } from '../types/gateway-api.js';
import { canonicalIp } from '../proxy-settings/requested-addresses.js';
import { DEPLOYED_KINDS, type DeployedKind, type DeployerApi, type OwnedObject } from './api.js';
import { render, type RenderParams } from './render.js';

const key = (o: { kind: string; namespace: string; name: string }) => `${o.kind}/${o.namespace}/${o.name}`;
const gatewayKey = (gw: Gateway) => `${gw.metadata.namespace}/${gw.metadata.name}`;

export interface DeployerPassResult {
  readonly applied: number;
  readonly deleted: number;
  readonly failed: number;
}

const DEFAULT_RETRY: RetryOptions = { initialMs: 1000, maxMs: 30_000 };
/** At most one pass started by the watch of owned objects per this interval. */
const RESTORE_INTERVAL_MS = 1000;

export interface SubmitOptions {
  /** Gateways whose objects stay as they are (refused for their parameters): not applied, not pruned. */
  readonly keep?: readonly Gateway[];
  /** A Gateway's settings before its annotations (its parameters); default: the deployer's defaults. */
  readonly settings?: (gateway: Gateway) => ProxySettings;
}

/**
 * What changes when someone else edits an object: its spec (generation, where the kind has
 * one), labels, annotations and owners. Status updates (a Deployment's replicas counts) and
 * the Deployment controller's own annotations (its revision) leave it alone, so they start no
 * pass.
 */
export function fingerprint(o: KubernetesObject & { spec?: unknown; automountServiceAccountToken?: unknown }): string {
  const m = o.metadata ?? {};
  const body = m.generation === undefined ? { spec: o.spec, automount: o.automountServiceAccountToken } : { generation: m.generation };
  const annotations = Object.entries(m.annotations ?? {}).filter(([k]) => !k.startsWith('deployment.kubernetes.io/'));
  return canonical({ ...body, labels: m.labels, annotations, owners: m.ownerReferences });
}

/** JSON with object keys sorted: the client orders the keys of typed objects its own way. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x) && !(x instanceof Date) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x,
  );
}

export interface DeployerOptions {
  readonly api: DeployerApi;
  readonly params: RenderParams;
  readonly isLeader: () => boolean;
  readonly log: Logger;
  /** Told each pass's result (tests and the controller's metrics wait on it). */
  readonly onPass?: (r: DeployerPassResult) => void;
  /** Retries of failed applies and lists; default 1 s doubling to 30 s. */
  readonly retry?: RetryOptions;
  /** Told each new problem of a Gateway's settings (the controller records a Warning Event on it). */
  readonly onProblem?: (gateway: Gateway, problem: string) => void;
  /** Told when what conflict() or addressRefusal() answer changed (the status writer reads them again). */
  readonly onBlockedChange?: () => void;
  /**
   * The watch of the owned objects (OwnedObjects.epoch): a number that stays the same while every
   * change to them reaches observed(), null while it does not. Without it, each pass lists them.
   */
  readonly watchEpoch?: () => number | null;
}

/** What a pass that left nothing to do saw: the same again (and no news from the watch) needs no pass. */
interface Settled {
  readonly signature: string;
  readonly epoch: number;
}

export class Deployer implements Runnable {
  readonly name = 'deployer';
  readonly needsLeader = true;
  #gateways: readonly Gateway[] | undefined;
  #options: SubmitOptions = {};
  #dirty = false;
  #active = false;
  #pass: Promise<void> | undefined;
  readonly #retry: RetryBackoff;
  #restoreTimer: NodeJS.Timeout | undefined;
  #lastRestore = 0;
  #restoreWait: Promise<void> | undefined;
  /** key -> JSON of the last object applied successfully. */
  readonly #applied = new Map<string, string>();
  /** key -> fingerprint() of the object as the last apply stored it. */
  readonly #stored = new Map<string, string>();
  /** Keys being applied now -> what the watch said of them meanwhile (judged once the apply answered). */
  readonly #inflight = new Map<string, { kind: DeployedKind; event: OwnedEvent; obj: KubernetesObject }[]>();
  /** `<ns>/<name>` -> the problems last reported, so each is logged once. */
  readonly #reported = new Map<string, string>();
  /** `<ns>/<name>` of a Gateway -> why its proxies cannot be deployed (a name taken), as of the last pass. */
  #conflicts = new Map<string, string>();
  /** `<ns>/<name>` of a Gateway -> why the API server refused its Service's requested address, as of the last pass. */
  #refusedAddresses = new Map<string, AddressRefusal>();
  /** The last pass that applied and pruned everything it wanted, while the watch held; null once anything may differ. */
  #settled: Settled | null = null;
  /** Changes observed() took for someone else's: a pass during which it moves does not count as settled. */
  #changes = 0;
  readonly #o: Required<Omit<DeployerOptions, 'retry'>>;

  constructor(options: DeployerOptions) {
    const none = () => undefined;
    this.#o = { ...options, onPass: options.onPass ?? none, onProblem: options.onProblem ?? none, onBlockedChange: options.onBlockedChange ?? none, watchEpoch: options.watchEpoch ?? (() => null) };
    this.#retry = new RetryBackoff(options.retry ?? DEFAULT_RETRY);
  }

  /** Why the Gateway's proxies cannot be deployed, while that is so: an object of their name that is not theirs. */
  conflict(namespace: string, name: string): string | undefined {
    return this.#conflicts.get(`${namespace}/${name}`);
  }

  /** Why the API server refused the address the Gateway asks for (spec.addresses), while that is so. */
  addressRefusal(namespace: string, name: string): AddressRefusal | undefined {
    return this.#refusedAddresses.get(`${namespace}/${name}`);
  }

  /** The Gateways whose class is ours, as the caches hold them. */
  submit(gateways: readonly Gateway[], options: SubmitOptions = {}): void {
    this.#gateways = gateways;
    this.#options = options;
    this.#dirty = true;
    this.#kick();
  }

  /**
   * An owned object as the watch saw it. Deleted, or changed from what the last apply stored
   * (a hand edit): forget the apply and start a pass, which puts the rendering back (forced
   * server-side apply). Our own applies come back with the fingerprint recorded.
   */
  observed(kind: DeployedKind, event: OwnedEvent, obj: KubernetesObject): void {
    const k = key({ kind, namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
    // Our own apply may be reported before its answer arrives: wait for the answer.
    const raced = this.#inflight.get(k);
    if (raced) {
      raced.push({ kind, event, obj });
      return;
    }
    const recorded = this.#stored.get(k);
    if (recorded !== undefined && event !== 'delete' && fingerprint(obj) === recorded) return;
    // Not our own apply coming back: what the last pass saw no longer holds.
    this.#changes++;
    this.#settled = null;
    if (recorded === undefined) return;
    this.#o.log.info({ kind, namespace: obj.metadata?.namespace, name: obj.metadata?.name, event }, event === 'delete' ? 'deleted by someone else; putting it back' : 'changed by someone else; putting it back');
    this.#applied.delete(k);
    this.#stored.delete(k);
    this.#restoreSoon();
  }

  /**
   * A pass now, or once RESTORE_INTERVAL_MS has passed since the last restore: another writer
   * fighting over a field (an autoscaler on replicas) costs a write a second, not a loop.
   */
  #restoreSoon(): void {
    if (this.#restoreTimer) return;
    const wait = this.#lastRestore + RESTORE_INTERVAL_MS - Date.now();
    const go = () => {
      this.#restoreTimer = undefined;
      this.#lastRestore = Date.now();
      this.#dirty = true;
      this.#kick();
    };
    if (wait <= 0) return go();
    let fired!: () => void;
    this.#restoreWait = new Promise<void>((resolve) => (fired = resolve));
    this.#restoreTimer = setTimeout(() => {
      go();
      fired();
    }, wait);
    this.#restoreTimer.unref();
  }

  async start(): Promise<void> {
    this.#active = true;
    // A new term: what another leader (or an earlier term) applied may differ from our memory.
    this.#applied.clear();
    this.#stored.clear();
    this.#settled = null;
    this.#dirty = this.#gateways !== undefined;
    this.#kick();
  }

  async stop(): Promise<void> {
    this.#active = false;
    this.#retry.cancel();
    clearTimeout(this.#restoreTimer);
    this.#restoreTimer = undefined;
    await this.#pass;
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    while (this.#pass || this.#restoreTimer) await (this.#pass ?? this.#restoreWait);
  }

  #may(): boolean {
    return this.#active && this.#o.isLeader();
  }

  #kick(): void {
    if (!this.#active || this.#pass || !this.#dirty) return;
    this.#retry.cancel();
    this.#pass = this.#run()
      .catch((err: unknown) => {
        this.#o.log.error({ code: CONTROLLER_ERRORS.deployFailed.code, err: describeApiError(err) }, 'deployer pass failed; retrying');
        return false;
      })
      .then((ok) => this.#scheduleRetry(ok))
      .finally(() => {
        this.#pass = undefined;
        this.#kick();
      });
  }

  #scheduleRetry(ok: boolean): void {
    if (ok) return this.#retry.succeeded();
    if (!this.#active) return;
    const inMs = this.#retry.failed(() => {
      this.#dirty = true;
      this.#kick();
    });
    this.#o.log.debug({ inMs }, 'deployer pass retry scheduled');
  }

  /** True when everything was applied and deleted as wanted (or leadership was lost). */
  async #run(): Promise<boolean> {
    this.#dirty = false;
    const gateways = this.#gateways ?? [];
    const { keep = [], settings } = this.#options;
    const rendered = gateways.map((gw) => {
      const { objects, problems } = render(gw, settings ? { ...this.#o.params, defaults: settings(gw) } : this.#o.params);
      this.#report(gw, problems);
      return { gw, objects };
    });
    for (const k of this.#reported.keys()) if (!gateways.some((g) => gatewayKey(g) === k)) this.#reported.delete(k);

    // The same objects wanted as by the last pass that left nothing to do, and the watch says no
    // one changed them since: nothing to apply or prune, and no listing. (Every reconcile submits,
    // and a route change is one: three lists of the API server each, for nothing.)
    const epoch = this.#o.watchEpoch();
    const signature = epoch === null ? null : passSignature(rendered, keep);
    if (signature !== null && this.#settled?.signature === signature && this.#settled.epoch === epoch) {
      this.#o.onPass({ applied: 0, deleted: 0, failed: 0 });
      return true;
    }
    this.#settled = null;
    const changes = this.#changes;

    // What exists now: a listing failure stops the pass (pruning on a partial list would be wrong).
    const existing: OwnedObject[] = [];
    for (const { kind } of DEPLOYED_KINDS) existing.push(...(await this.#o.api.listOwned(kind)));
    const owned = new Map(existing.map((o) => [key(o), o]));
    const present = new Set(owned.keys());
    const kept = new Set(keep.flatMap((gw) => DEPLOYED_KINDS.map(({ kind }) => key({ kind, namespace: gw.metadata.namespace ?? '', name: proxyName(gw) }))));

    // Whose each name is: a Gateway whose objects' names are taken deploys nothing and keeps what it has.
    const desired = new Map<string, KubernetesObject>();
    const conflicts = new Map<string, string>();
    for (const { gw, objects } of rendered) {
      const conflict = await this.#conflictOf(gw, objects, owned, desired);
      if (conflict) {
        conflicts.set(gatewayKey(gw), conflict);
        for (const o of objects) kept.add(key({ kind: o.kind!, namespace: o.metadata!.namespace!, name: o.metadata!.name! }));
        continue;
      }
      for (const o of objects) desired.set(key({ kind: o.kind!, namespace: o.metadata!.namespace!, name: o.metadata!.name! }), o);
    }
    this.#setBlocked(conflicts, this.#refusedAddresses);

    let applied = 0;
    let failed = conflicts.size;
    const refused = new Map<string, AddressRefusal>();
    // ServiceAccount first: the Deployment's pods name it.
    for (const [k, obj] of desired) {
      if (!this.#may()) return true;
      const json = JSON.stringify(obj);
      const readdress = readdressed(obj, owned.get(k));
      if (this.#applied.get(k) === json && present.has(k) && !readdress) continue;
      // From here the watch's news of this name wait for the answer (the deletion below is ours).
      this.#inflight.set(k, []);
      try {
        // A ClusterIP cannot change in place: a Service asked for another address is replaced.
        if (readdress) {
          this.#stored.delete(k);
          await this.#o.api.delete(readdress);
          present.delete(k);
          this.#o.log.info({ kind: obj.kind, namespace: readdress.namespace, name: readdress.name, from: readdress.clusterIPs, to: (obj as V1Service).spec?.clusterIPs }, 'deleted to change its address');
        }
        const stored = await this.#o.api.apply(obj);
        this.#applied.set(k, json);
        this.#stored.set(k, fingerprint(stored));
        const raced = this.#inflight.get(k) ?? [];
        this.#inflight.delete(k);
        for (const r of raced) if (sameObject(r.obj, stored) && r.obj.metadata?.resourceVersion !== stored.metadata?.resourceVersion) this.observed(r.kind, r.event, r.obj);
        applied++;
        this.#o.log.info({ kind: obj.kind, namespace: obj.metadata!.namespace, name: obj.metadata!.name }, present.has(k) ? 'updated' : 'created');
      } catch (err) {
        this.#inflight.delete(k);
        failed++;
        this.#applied.delete(k);
        this.#stored.delete(k);
        // The Gateway's own choice refused: said once (#setBlocked) and on its status, not as our failure.
        const refusal = addressRefusal(obj, err);
        if (refusal !== undefined) refused.set(`${obj.metadata!.namespace}/${obj.metadata!.labels![GATEWAY_NAME_LABEL]}`, refusal);
        else this.#o.log.error({ code: CONTROLLER_ERRORS.deployFailed.code, kind: obj.kind, namespace: obj.metadata!.namespace, name: obj.metadata!.name, err: describeApiError(err) }, `could not apply ${obj.kind}`);
      }
    }
    this.#setBlocked(conflicts, refused);

    let deleted = 0;
    for (const o of existing) {
      const k = key(o);
      if (desired.has(k) || kept.has(k)) continue;
      if (!this.#may()) return true;
      // Forgotten first: the watch reports the deletion as it happens, and it is ours.
      this.#stored.delete(k);
      try {
        await this.#o.api.delete(o);
        this.#applied.delete(k);
        deleted++;
        this.#o.log.info({ kind: o.kind, namespace: o.namespace, name: o.name }, 'deleted (no Gateway needs it)');
      } catch (err) {
        failed++;
        this.#o.log.error({ code: CONTROLLER_ERRORS.deployFailed.code, kind: o.kind, namespace: o.namespace, name: o.name, err: describeApiError(err) }, `could not delete ${o.kind}`);
      }
    }
    if (failed === 0 && signature !== null && epoch !== null && changes === this.#changes) this.#settled = { signature, epoch };
    this.#o.onPass({ applied, deleted, failed });
    this.#o.log.debug({ gateways: gateways.length, applied, deleted, failed }, 'deployer pass finished');
    return failed === 0;
  }

  /** Why the Gateway may not write `objects`, or undefined when every name is free or already its own. */
  async #conflictOf(gw: Gateway, objects: readonly KubernetesObject[], owned: ReadonlyMap<string, OwnedObject>, claimed: ReadonlyMap<string, KubernetesObject>): Promise<string | undefined> {
    for (const o of objects) {
      const kind = o.kind as DeployedKind;
      const namespace = o.metadata!.namespace!;
      const name = o.metadata!.name!;
      const k = key({ kind, namespace, name });
      const other = claimed.get(k)?.metadata?.labels?.[GATEWAY_NAME_LABEL] ?? owned.get(k)?.gateway;
      if (other !== undefined && other !== gw.metadata.name)
        return `${kind} ${namespace}/${name} runs the proxies of Gateway ${namespace}/${other}: both Gateways' proxies get that name (<gateway>-<class>); rename one of the Gateways`;
      if (other === undefined && (await this.#o.api.exists(kind, namespace, name)))
        return `${kind} ${namespace}/${name} exists and was not made by Tollgate for this Gateway (it lacks the labels ${MANAGED_BY_LABEL}=${MANAGED_BY}, ${COMPONENT_LABEL}=${COMPONENT} and ${GATEWAY_NAME_LABEL}=${gw.metadata.name}); Tollgate does not take over objects it did not make: delete or rename it (kubectl delete ${kind.toLowerCase()} ${name} -n ${namespace}), or rename the Gateway`;
    }
    return undefined;
  }

  #setBlocked(conflicts: Map<string, string>, refused: Map<string, AddressRefusal>): void {
    const messages = (m: ReadonlyMap<string, AddressRefusal>) => new Map([...m].map(([k, r]) => [k, r.message]));
    const changed = differs(conflicts, this.#conflicts) || differs(messages(refused), messages(this.#refusedAddresses));
    for (const [k, message] of conflicts) {
      if (this.#conflicts.get(k) !== message) this.#o.log.warn({ code: CONTROLLER_ERRORS.proxyConflict.code, gateway: k, problem: message }, `Gateway ${k}: ${message}`);
    }
    for (const [k, { message }] of refused) {
      if (this.#refusedAddresses.get(k)?.message !== message) this.#o.log.warn({ code: CONTROLLER_ERRORS.addressRefused.code, gateway: k, problem: message }, `Gateway ${k}: ${message}`);
    }
    this.#conflicts = conflicts;
    this.#refusedAddresses = refused;
    if (changed) this.#o.onBlockedChange();
  }

  #report(gw: Gateway, problems: readonly string[]): void {
    const id = `${gw.metadata.namespace}/${gw.metadata.name}`;
    const text = problems.join('\n');
    if (this.#reported.get(id) === text) return;
    this.#reported.set(id, text);
    for (const problem of problems) {
      this.#o.log.warn({ code: CONTROLLER_ERRORS.proxySettings.code, gateway: id, problem }, `Gateway ${id}: ${problem}`);
      this.#o.onProblem(gw, problem);
    }
  }
}

/** What a pass wants, hashed (not held: at a thousand Gateways, megabytes of text): every rendered object, and the Gateways whose objects stay as they are. */
function passSignature(rendered: readonly { readonly objects: readonly KubernetesObject[] }[], keep: readonly Gateway[]): string {
  const h = createHash('sha256');
  for (const r of rendered) for (const o of r.objects) h.update(JSON.stringify(o)).update('\n');
  for (const gw of keep) h.update(`keep ${gatewayKey(gw)}\n`);
  return h.digest('hex');
}

/** The Service as it exists, when the rendering asks for ClusterIPs it does not have (it must be replaced). */
function readdressed(obj: KubernetesObject, existing: OwnedObject | undefined): OwnedObject | undefined {
  const wanted = obj.kind === 'Service' ? (obj as V1Service).spec?.clusterIPs : undefined;
  if (!wanted?.length || !existing?.clusterIPs?.length) return undefined;
  const have = existing.clusterIPs.map((ip) => canonicalIp(ip)?.ip ?? ip);
  return wanted.length === have.length && wanted.every((ip, i) => ip === have[i]) ? undefined : existing;
}

/** A watch event of the object an apply stored, not of an earlier one of the same name (replaced). */
function sameObject(seen: KubernetesObject, stored: KubernetesObject): boolean {
  const a = seen.metadata?.uid;
  const b = stored.metadata?.uid;
  return a === undefined || b === undefined || a === b;
}

function differs(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size !== b.size || [...a].some(([k, v]) => b.get(k) !== v);
}

export type { DeployedKind };
