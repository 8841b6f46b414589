// The admitted proxies, by Gateway, and the protocol run with each: every proxy is sent its
// Gateway's current snapshot from the store. Per stream at most one push is unanswered: a newer
// version waits until the proxy ACKs or NACKs the last push or the answer times out. A NACKed
// version is not sent again to that proxy; the next different version is, in full. A NACK
// rejects the Gateway (rejections.ts) until its proxies ACK another version.
//
// The per-proxy metrics live and die here: the series of a version no connected proxy holds is
// removed, and a Gateway deleted from the store loses its series once its last proxy has gone.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { clip } from './clip.js';
import type { PayloadCache } from './payload-cache.js';
import type { ProxyStream, ProxyView } from './proxy-stream.js';
import { Rejections, type Rejection } from './rejections.js';
import type { OfferResult, SnapshotStore } from './store.js';
import type { StreamMetrics } from './stream-metrics.js';

export interface NackReport {
  readonly gateway: string;
  readonly pod: string;
  readonly version: string;
  readonly error: string;
}

export interface FleetOptions {
  readonly store: SnapshotStore;
  readonly payloads: PayloadCache;
  readonly metrics: StreamMetrics;
  readonly log: Logger;
  /** How long a push may stay unanswered before a newer one may be sent. */
  readonly answerTimeoutMs: number;
  /** A proxy refused a version. */
  readonly onNack?: (r: NackReport) => void;
  /** A Gateway became rejected (a NACK) or stopped being so. */
  readonly onRejectionChange?: (gateway: string) => void;
  /** A proxy of the Gateway connected, ACKed a version or went away. */
  readonly onProxiesChange?: (gateway: string) => void;
}

export class ProxyFleet {
  readonly #o: FleetOptions;
  /** Admitted streams, by Gateway. */
  readonly #byGateway = new Map<string, Set<ProxyStream>>();
  readonly #rejections = new Rejections();
  /** The callers of answered() waiting now; each leaves at its bound (a proxy that never answers holds none for long). */
  readonly #waiters = new Set<() => void>();

  constructor(o: FleetOptions) {
    this.#o = o;
  }

  /**
   * Resolves once no proxy has a push unanswered (ACKed, NACKed, timed out or its stream gone),
   * or after `maxMs`: at once when none has. The status writer waits for it so that its writes,
   * and the API server's work on them, do not take the cores the proxies apply a change on.
   */
  answered(maxMs: number): Promise<void> {
    if (!this.#anyPending()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      timer.unref();
      this.#waiters.add(done);
    });
  }

  #anyPending(): boolean {
    for (const set of this.#byGateway.values()) for (const s of set) if (s.pending) return true;
    return false;
  }

  /** After an answer, a timeout or a stream gone: the waiters are told when nothing is pending now. */
  #maybeAnswered(): void {
    if (!this.#waiters.size || this.#anyPending()) return;
    for (const done of [...this.#waiters]) done();
  }

  /** Callers of answered() waiting now (tests). */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** Admitted streams of the Gateway. */
  count(gateway: string): number {
    return this.#byGateway.get(gateway)?.size ?? 0;
  }

  /** Why the Gateway's snapshot is rejected, while it is. */
  rejection(gateway: string): Rejection | undefined {
    return this.#rejections.get(gateway);
  }

  /** Connected proxies, by Gateway (sorted by pod). */
  proxies(): Map<string, ProxyView[]> {
    const out = new Map<string, ProxyView[]>();
    const all = [...this.#byGateway.values()].flatMap((set) => [...set]);
    for (const s of all.sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0))) {
      const list = out.get(s.gateway) ?? [];
      list.push(s.view());
      out.set(s.gateway, list);
    }
    return out;
  }

  /** An admitted stream joins; nothing is sent until push(). */
  add(s: ProxyStream): void {
    let set = this.#byGateway.get(s.gateway);
    if (!set) this.#byGateway.set(s.gateway, (set = new Set()));
    set.add(s);
    this.#o.metrics.connected.inc({ gateway: s.gateway });
    if (s.acked) this.#o.metrics.acked.inc({ gateway: s.gateway, version: s.acked });
    this.#o.log.info({ gateway: s.gateway, pod: s.pod, version: s.acked }, 'proxy connected');
    this.#o.onProxiesChange?.(s.gateway);
  }

  has(s: ProxyStream): boolean {
    return this.#byGateway.get(s.gateway)?.has(s) === true;
  }

  /** The stream is gone (`endCall`: the controller ends it with OK). */
  remove(s: ProxyStream, endCall = true): void {
    const set = this.#byGateway.get(s.gateway);
    if (!set?.delete(s)) return;
    if (!set.size) this.#byGateway.delete(s.gateway);
    s.close();
    this.#o.metrics.connected.dec({ gateway: s.gateway });
    if (s.acked) this.#releaseAcked(s.gateway, s.acked);
    this.#o.log.info({ gateway: s.gateway, pod: s.pod }, 'proxy disconnected');
    this.#sweep(s.gateway);
    this.#forgetIfGone(s.gateway);
    if (endCall) s.link.end();
    this.#o.onProxiesChange?.(s.gateway);
    // The proxy that held a rejection back may be the one gone.
    if (this.count(s.gateway)) this.#settle(s.gateway);
    this.#maybeAnswered();
  }

  /** Every stream ends (the server stops). */
  removeAll(): void {
    for (const set of [...this.#byGateway.values()]) for (const s of [...set]) this.remove(s);
  }

  /** The store changed: changed Gateways' proxies are sent the new version, removed ones forgotten. */
  storeChanged(r: OfferResult): void {
    for (const g of r.removed) {
      this.#o.payloads.forget(g);
      this.#forgetIfGone(g);
    }
    for (const g of r.changed) for (const s of this.#byGateway.get(g) ?? []) this.push(s);
  }

  /** Sends the Gateway's current version when the proxy wants it and nothing waits for an answer. */
  push(s: ProxyStream): void {
    if (!this.has(s)) return;
    const entry = this.#o.store.get(s.gateway);
    if (!entry || !s.wants(entry.version)) return;
    const { payload, form } = this.#o.payloads.payload(s.gateway, entry, s.deltaBase());
    this.#o.metrics.pushBytes.inc({ form }, payload.bytes.length);
    const nonce = randomBytes(8).toString('hex');
    const timer = setTimeout(() => this.#timeout(s, nonce), this.#o.answerTimeoutMs);
    timer.unref();
    s.sent({ version: entry.version, nonce, form, sentAt: process.hrtime.bigint(), timer });
    this.#sweep(s.gateway);
    s.link.send({ version: entry.version, nonce, payload });
  }

  ack(s: ProxyStream, version: string, nonce: string): void {
    const r = s.ack(version, nonce);
    if (!r) {
      this.#o.log.debug({ gateway: s.gateway, pod: s.pod, version: clip(version), nonce: clip(nonce) }, 'stale or unknown ACK ignored');
      return;
    }
    if (r.previous) this.#releaseAcked(s.gateway, r.previous);
    this.#o.metrics.acked.inc({ gateway: s.gateway, version });
    this.#o.metrics.answered(s.gateway, 'ack');
    this.#o.metrics.pushLatency.observe({ gateway: s.gateway }, Number(process.hrtime.bigint() - r.answered.sentAt) / 1e9);
    this.#o.log.debug({ gateway: s.gateway, pod: s.pod, version }, 'snapshot acknowledged');
    this.#settle(s.gateway);
    this.#o.onProxiesChange?.(s.gateway);
    this.#sweep(s.gateway);
    this.push(s);
    this.#maybeAnswered();
  }

  nack(s: ProxyStream, nonce: string, error: string, wantFull: boolean): void {
    const r = s.nack(nonce, error, wantFull);
    if (r.kind === 'stale') {
      this.#o.log.debug({ gateway: s.gateway, pod: s.pod, nonce: clip(nonce) }, 'stale or unknown NACK ignored');
      return;
    }
    if (r.kind === 'resend_full') {
      this.#o.metrics.answered(s.gateway, 'nack_delta');
      this.#o.log.info({ gateway: s.gateway, pod: s.pod, version: r.version, error: r.error }, `proxy ${s.pod} could not take snapshot ${r.version} as a delta (${r.error}); sending it in full`);
      this.push(s);
      return;
    }
    this.#o.metrics.answered(s.gateway, 'nack');
    this.#o.log.warn({ gateway: s.gateway, pod: s.pod, version: r.version, error: r.error }, `proxy ${s.pod} refused snapshot ${r.version}: ${r.error}`);
    this.#o.onNack?.({ gateway: s.gateway, pod: s.pod, version: r.version, error: r.error });
    if (this.#rejections.refused(s.gateway, { version: r.version, pod: s.pod, error: r.error })) this.#o.onRejectionChange?.(s.gateway);
    this.push(s);
    this.#maybeAnswered();
  }

  #timeout(s: ProxyStream, nonce: string): void {
    const p = s.timedOut(nonce);
    if (!p) return;
    this.#o.log.warn({ gateway: s.gateway, pod: s.pod, version: p.version }, `proxy did not answer within ${this.#o.answerTimeoutMs}ms; sending the current version`);
    this.#o.metrics.answered(s.gateway, 'timeout');
    // The same version is sent again (with a new nonce) when it is still the current one.
    const current = this.#o.store.get(s.gateway);
    if (current && current.version !== s.acked) this.push(s);
    this.#maybeAnswered();
  }

  #settle(gateway: string): void {
    if (this.#rejections.settle(gateway, this.#byGateway.get(gateway) ?? [])) this.#o.onRejectionChange?.(gateway);
  }

  /** Drops the Gateway's delta bases that are not current and that no connected proxy holds or is being sent. */
  #sweep(gateway: string): void {
    const keep = new Set<string | null | undefined>([this.#o.store.get(gateway)?.version]);
    for (const s of this.#byGateway.get(gateway) ?? []) {
      keep.add(s.acked);
      keep.add(s.pending?.version);
    }
    this.#o.payloads.sweep(gateway, keep);
  }

  /**
   * One proxy fewer holds `version` (it ACKed another or went away). The series of a version
   * no connected proxy holds is removed: kept at 0, the registry would gain a series with every
   * version ever served, and under a steady stream of changes grow without bound.
   */
  #releaseAcked(gateway: string, version: string): void {
    for (const s of this.#byGateway.get(gateway) ?? []) {
      if (s.acked === version) {
        this.#o.metrics.acked.dec({ gateway, version });
        return;
      }
    }
    this.#o.metrics.acked.remove({ gateway, version });
  }

  /**
   * A Gateway deleted from the store whose last proxy has gone: its metric series and any
   * rejection are dropped (a Gateway created again under the name starts clean).
   */
  #forgetIfGone(gateway: string): void {
    if (this.#o.store.get(gateway) || this.count(gateway)) return;
    this.#o.metrics.forget(gateway);
    this.#rejections.forget(gateway);
  }
}
