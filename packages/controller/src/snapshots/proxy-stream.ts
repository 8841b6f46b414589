// One admitted proxy's state on its stream, in the manner of xDS state of the world: the version
// it holds (ACKed, or announced in its hello), the one push it has not answered yet, and the last
// version it refused. The transitions of an answer are decided here; what follows from them
// (metrics, the next push, rejections) is the fleet's (proxy-fleet.ts).
import type { OutgoingPush } from '@tollgate/api/snapshot-stream';
import type { PayloadForm } from './payload-cache.js';

export interface ProxyView {
  readonly pod: string;
  readonly podNamespace: string;
  readonly peer: string;
  readonly connectedSince: string;
  /** The version the proxy last ACKed (or said it serves when it connected); null: none. */
  readonly ackedVersion: string | null;
  /** The version sent and not yet answered. */
  readonly pending: string | null;
  readonly lastNack: { readonly version: string; readonly error: string; readonly at: string } | null;
}

/** The transport of one stream: what the fleet needs of it. */
export interface ProxyLink {
  /** The client's address as gRPC names it (`ipv4:10.0.0.7:51234`). */
  readonly peer: string;
  send(push: OutgoingPush): void;
  /** Ends the stream with OK (the controller lets the proxy go). */
  end(): void;
}

export interface Pending {
  readonly version: string;
  readonly nonce: string;
  readonly form: PayloadForm;
  readonly sentAt: bigint;
  readonly timer: NodeJS.Timeout;
}

/** Longest NACK reason kept (it is logged, reported in status and listed by the admin API). */
export const MAX_NACK_ERROR = 2048;

/** What a NACK means. */
export type NackOutcome =
  /** No push with that nonce is waiting: ignored. */
  | { readonly kind: 'stale' }
  /** The proxy could not resolve a delta: the same version goes again in full; no refusal. */
  | { readonly kind: 'resend_full'; readonly version: string; readonly error: string }
  /** The proxy refused the version: it is not sent to this proxy again. */
  | { readonly kind: 'refused'; readonly version: string; readonly error: string };

export class ProxyStream {
  #acked: string | null;
  #pending: Pending | null = null;
  /** The last version this proxy refused: not sent to it again. */
  #nacked: { readonly version: string; readonly error: string; readonly at: Date } | null = null;
  /** After a NACK the next push is the full form (the proxy may not hold what a delta names). */
  #fullNext = false;
  readonly since = new Date();
  /** Set once admitted: its re-checks, token expiry and age (stopped when the stream closes). */
  lifetime: { stop(): void } | null = null;

  constructor(
    readonly link: ProxyLink,
    readonly gateway: string,
    readonly pod: string,
    readonly podNamespace: string,
    /** The version its hello announced ('' for none). */
    version: string,
    /** The proxy said it resolves deltas (an older proxy is sent the full form only). */
    readonly deltas: boolean,
  ) {
    this.#acked = version === '' ? null : version;
  }

  get acked(): string | null {
    return this.#acked;
  }

  get pending(): Pending | null {
    return this.#pending;
  }

  /** True while the proxy refused a version and has ACKed none since. */
  get refusing(): boolean {
    return this.#nacked !== null;
  }

  /** Whether `version` is to be sent: nothing is waiting for an answer, and it holds nor refused it. */
  wants(version: string): boolean {
    return this.#pending === null && version !== this.#acked && version !== this.#nacked?.version;
  }

  /** The version a delta may be relative to; null: the full form. */
  deltaBase(): string | null {
    return this.deltas && !this.#fullNext ? this.#acked : null;
  }

  sent(p: Pending): void {
    this.#fullNext = false;
    this.#pending = p;
  }

  /** The answer to the push with `nonce` timed out: that push when it is still the pending one. */
  timedOut(nonce: string): Pending | undefined {
    const p = this.#pending;
    if (p?.nonce !== nonce) return undefined;
    this.#pending = null;
    return p;
  }

  /** An ACK: the push answered and the version it held before, or undefined when stale. */
  ack(version: string, nonce: string): { readonly answered: Pending; readonly previous: string | null } | undefined {
    const p = this.#pending;
    if (!p || p.nonce !== nonce || p.version !== version) return undefined;
    clearTimeout(p.timer);
    this.#pending = null;
    const previous = this.#acked;
    this.#acked = version;
    this.#nacked = null;
    return { answered: p, previous };
  }

  /** A NACK of the push with `nonce`; `wantFull`: the proxy asks for the full form. */
  nack(nonce: string, error: string, wantFull: boolean, now = new Date()): NackOutcome {
    const p = this.#pending;
    if (!p || p.nonce !== nonce) return { kind: 'stale' };
    clearTimeout(p.timer);
    this.#pending = null;
    const message = error.slice(0, MAX_NACK_ERROR) || 'no reason given';
    this.#fullNext = true;
    // The proxy does not hold what the delta names (it applied a push whose answer was lost,
    // say): this is no refusal of the snapshot.
    if (wantFull && p.form === 'delta') return { kind: 'resend_full', version: p.version, error: message };
    this.#nacked = { version: p.version, error: message, at: now };
    return { kind: 'refused', version: p.version, error: message };
  }

  /** The stream closed: nothing waits for an answer any longer. */
  close(): void {
    if (this.#pending) clearTimeout(this.#pending.timer);
    this.#pending = null;
    this.lifetime?.stop();
  }

  view(): ProxyView {
    const n = this.#nacked;
    return {
      pod: this.pod,
      podNamespace: this.podNamespace,
      peer: this.link.peer,
      connectedSince: this.since.toISOString(),
      ackedVersion: this.#acked,
      pending: this.#pending?.version ?? null,
      lastNack: n && { version: n.version, error: n.error, at: n.at.toISOString() },
    };
  }
}
