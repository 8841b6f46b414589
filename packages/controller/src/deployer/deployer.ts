// The deployer: keeps the proxies of every Gateway of our class running. Leader only, like
// the status writer. Each reconcile hands it the Gateways it serves; a pass renders each one,
// applies what changed (server-side apply, field manager `tollgate`) and deletes the objects
// carrying its labels that no Gateway needs any more (a deleted Gateway, a Gateway moved to
// another class). Objects also carry an ownerReference to their Gateway, so a cluster's
// garbage collector removes them with it even when no controller runs.
//
// One pass at a time; a newer set of Gateways supersedes an older one. An object is applied
// when its rendering changed since the last successful apply, or when the listing at the start
// of the pass shows it missing (deleted by hand): the next pass puts it back. A pass with a
// failure (API server away, a refused object) is retried with a backoff even if nothing
// changes, so a quiet cluster does not wait for an unrelated change to heal.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';
import type { Runnable } from '../runtime/runnable.js';
import type { Gateway } from '../types/gateway-api.js';
import { DEPLOYED_KINDS, type DeployedKind, type DeployerApi, type OwnedObject } from './api.js';
import { render, type RenderParams } from './render.js';

const key = (o: { kind: string; namespace: string; name: string }) => `${o.kind}/${o.namespace}/${o.name}`;

export interface DeployerPassResult {
  readonly applied: number;
  readonly deleted: number;
  readonly failed: number;
}

export interface RetryOptions {
  readonly initialMs: number;
  readonly maxMs: number;
}

const DEFAULT_RETRY: RetryOptions = { initialMs: 1000, maxMs: 30_000 };

export class Deployer implements Runnable {
  readonly name = 'deployer';
  readonly needsLeader = true;
  #gateways: readonly Gateway[] | undefined;
  #dirty = false;
  #active = false;
  #pass: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryMs = 0;
  /** key -> JSON of the last object applied successfully. */
  readonly #applied = new Map<string, string>();
  /** `<ns>/<name>` -> the problems last reported, so each is logged once. */
  readonly #reported = new Map<string, string>();

  constructor(
    private readonly api: DeployerApi,
    private readonly params: RenderParams,
    private readonly isLeader: () => boolean,
    private readonly log: Logger,
    private readonly onPass: (r: DeployerPassResult) => void = () => undefined,
    private readonly retry: RetryOptions = DEFAULT_RETRY,
    /** Told each new problem of a Gateway's settings (the controller records a Warning Event on it). */
    private readonly onProblem: (gateway: Gateway, problem: string) => void = () => undefined,
  ) {}

  /** The Gateways whose class is ours, as the caches hold them. */
  submit(gateways: readonly Gateway[]): void {
    this.#gateways = gateways;
    this.#dirty = true;
    this.#kick();
  }

  async start(): Promise<void> {
    this.#active = true;
    // A new term: what another leader (or an earlier term) applied may differ from our memory.
    this.#applied.clear();
    this.#dirty = this.#gateways !== undefined;
    this.#kick();
  }

  async stop(): Promise<void> {
    this.#active = false;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#pass;
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    while (this.#pass) await this.#pass;
  }

  #may(): boolean {
    return this.#active && this.isLeader();
  }

  #kick(): void {
    if (!this.#active || this.#pass || !this.#dirty) return;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#pass = this.#run()
      .catch((err: unknown) => {
        this.log.error({ code: CONTROLLER_ERRORS.deployFailed.code, err: describeApiError(err) }, 'deployer pass failed; retrying');
        return false;
      })
      .then((ok) => this.#scheduleRetry(ok))
      .finally(() => {
        this.#pass = undefined;
        this.#kick();
      });
  }

  #scheduleRetry(ok: boolean): void {
    if (ok) {
      this.#retryMs = 0;
      return;
    }
    if (!this.#active) return;
    this.#retryMs = this.#retryMs ? Math.min(this.#retryMs * 2, this.retry.maxMs) : this.retry.initialMs;
    this.log.debug({ inMs: this.#retryMs }, 'deployer pass retry scheduled');
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#dirty = true;
      this.#kick();
    }, this.#retryMs);
    this.#retryTimer.unref();
  }

  /** True when everything was applied and deleted as wanted (or leadership was lost). */
  async #run(): Promise<boolean> {
    this.#dirty = false;
    const gateways = this.#gateways ?? [];
    const desired = new Map<string, KubernetesObject>();
    for (const gw of gateways) {
      const { objects, problems } = render(gw, this.params);
      this.#report(gw, problems);
      for (const o of objects) desired.set(key({ kind: o.kind!, namespace: o.metadata!.namespace!, name: o.metadata!.name! }), o);
    }
    for (const k of this.#reported.keys()) if (!gateways.some((g) => `${g.metadata.namespace}/${g.metadata.name}` === k)) this.#reported.delete(k);

    // What exists now: a listing failure stops the pass (pruning on a partial list would be wrong).
    const existing: OwnedObject[] = [];
    for (const { kind } of DEPLOYED_KINDS) existing.push(...(await this.api.listOwned(kind)));
    const present = new Set(existing.map(key));

    let applied = 0;
    let failed = 0;
    // ServiceAccount first: the Deployment's pods name it.
    for (const [k, obj] of desired) {
      if (!this.#may()) return true;
      const json = JSON.stringify(obj);
      if (this.#applied.get(k) === json && present.has(k)) continue;
      try {
        await this.api.apply(obj);
        this.#applied.set(k, json);
        applied++;
        this.log.info({ kind: obj.kind, namespace: obj.metadata!.namespace, name: obj.metadata!.name }, present.has(k) ? 'updated' : 'created');
      } catch (err) {
        failed++;
        this.#applied.delete(k);
        this.log.error({ code: CONTROLLER_ERRORS.deployFailed.code, kind: obj.kind, namespace: obj.metadata!.namespace, name: obj.metadata!.name, err: describeApiError(err) }, `could not apply ${obj.kind}`);
      }
    }

    let deleted = 0;
    for (const o of existing) {
      const k = key(o);
      if (desired.has(k)) continue;
      if (!this.#may()) return true;
      try {
        await this.api.delete(o);
        this.#applied.delete(k);
        deleted++;
        this.log.info({ kind: o.kind, namespace: o.namespace, name: o.name }, 'deleted (no Gateway needs it)');
      } catch (err) {
        failed++;
        this.log.error({ code: CONTROLLER_ERRORS.deployFailed.code, kind: o.kind, namespace: o.namespace, name: o.name, err: describeApiError(err) }, `could not delete ${o.kind}`);
      }
    }
    this.onPass({ applied, deleted, failed });
    this.log.debug({ gateways: gateways.length, applied, deleted, failed }, 'deployer pass finished');
    return failed === 0;
  }

  #report(gw: Gateway, problems: readonly string[]): void {
    const id = `${gw.metadata.namespace}/${gw.metadata.name}`;
    const text = problems.join('\n');
    if (this.#reported.get(id) === text) return;
    this.#reported.set(id, text);
    for (const problem of problems) {
      this.log.warn({ code: CONTROLLER_ERRORS.proxySettings.code, gateway: id, problem }, `Gateway ${id}: ${problem}`);
      this.onProblem(gw, problem);
    }
  }
}

export type { DeployedKind };
