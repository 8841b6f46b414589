// The upgraded connections of one proxy (WebSockets): how many may be open at once
// (config.maxWebSocketConnections), how long one may stay idle (config.websocketIdleTimeout),
// and the tunnels open now, by the bind that accepted them, so that a bind's drain closes its
// own. An upgrade request takes a slot when it arrives, before any policy runs: a client cannot
// get past the cap by sending many upgrades at once, and a refused one costs nothing more. The
// slot is the tunnel's once the backend answered 101, and free again when the request ends
// without one or the tunnel closes.
import type { Duplex } from 'node:stream';
import type { Tunnel } from '../upstream/tunnel.js';
import { BodyBudget, type BytesBudget } from './body-budget.js';

/** config.maxWebSocketConnections default. */
export const DEFAULT_MAX_WEBSOCKET_CONNECTIONS = 1024;
/** config.websocketIdleTimeout default, ms: Envoy's stream idle timeout, which its upgrades keep too. */
export const DEFAULT_WEBSOCKET_IDLE_MS = 300_000;

export interface UpgradeSettings {
  readonly maxConnections: number;
  readonly idleMs: number;
}

/** The client's side of an upgrade request: its connection (the HTTP parser's no more) and what it sent after its headers. */
export interface UpgradeRequest {
  readonly socket: Duplex;
  readonly head: Buffer;
  readonly slot: UpgradeSlot;
  /** Whose drain closes the tunnel (the bind's server). */
  readonly bind: object;
}

export class UpgradeSlot {
  #tunnel: Tunnel | null = null;
  #released = false;
  constructor(private readonly owner: Upgrades) {}

  /** The backend answered 101: the slot is the tunnel's until it closes. */
  hold(tunnel: Tunnel, bind: object): void {
    if (this.#released || this.#tunnel) return;
    this.#tunnel = tunnel;
    this.owner.opened(tunnel, bind);
  }

  /** The request ended without a tunnel, or the tunnel closed; a second call does nothing. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.owner.released(this.#tunnel);
  }

  get holdsTunnel(): boolean {
    return this.#tunnel !== null;
  }
}

export class Upgrades {
  readonly #open = new Map<Tunnel, object>();
  /** Who waits for the last tunnel to close (allClosed). */
  #waiting: (() => void)[] = [];
  /** The slots, counted as a budget of maxConnections: this thread's, or the one all worker threads share. */
  readonly #slots: BytesBudget;

  constructor(
    readonly settings: UpgradeSettings,
    slots?: BytesBudget,
  ) {
    this.#slots = slots ?? new BodyBudget(settings.maxConnections);
  }

  /** A slot for one more upgrade, or null at the cap. */
  reserve(): UpgradeSlot | null {
    return this.#slots.take(1) ? new UpgradeSlot(this) : null;
  }

  /** Tunnels open now (the gauge). */
  get open(): number {
    return this.#open.size;
  }

  /** Slots taken now: tunnels open and upgrade requests still on their way to a backend. */
  get taken(): number {
    return this.#slots.used;
  }

  opened(tunnel: Tunnel, bind: object): void {
    this.#open.set(tunnel, bind);
  }

  released(tunnel: Tunnel | null): void {
    this.#slots.giveBack(1);
    if (!tunnel) return;
    this.#open.delete(tunnel);
    if (this.#open.size === 0) for (const resolve of this.#waiting.splice(0)) resolve();
  }

  /**
   * Resolves once no tunnel is open: the drain ends with its tunnels closed (each is closed at
   * the drain's deadline and cut after a short grace), their close logged, not with them closing
   * still (a worker thread is stopped as soon as its drain ends).
   */
  allClosed(): Promise<void> {
    if (this.#open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Closes the tunnels one bind accepted (its drain reached its deadline); each releases its slot as it closes. */
  closeBind(bind: object): void {
    for (const [tunnel, owner] of this.#open) if (owner === bind) tunnel.close('drain');
  }
}
