// How many streams the controller holds at once (stream-limits.ts has the numbers): streams open
// in all, admitted or not; streams not yet admitted from one address (so a client cannot hold
// the room of the whole server with streams that never authenticate); admitted streams of one
// Gateway. A stream over a cap is refused with RESOURCE_EXHAUSTED and a message saying so.
import type { Gauge } from 'prom-client';
import { MAX_PENDING_PER_PEER, type StreamLimits } from './stream-limits.js';

/** The `limit` label of tollgate_controller_stream_limited_total for the caps counted here. */
export type CapLimit = 'streams' | 'pending_per_peer' | 'streams_per_gateway';

export interface CapRefusal {
  readonly limit: CapLimit;
  readonly message: string;
}

/** One open stream's place in the counts; close() once it ends, whatever happened. */
export interface StreamSlot {
  /** Its hello was admitted: it no longer counts against its address. */
  admitted(): void;
  close(): void;
}

export class StreamCaps {
  #open = 0;
  /** Streams not yet admitted, by peer address (without its port). */
  readonly #pendingByPeer = new Map<string, number>();

  /** `open` shows the streams open at once. */
  constructor(
    private readonly limits: Pick<StreamLimits, 'maxStreams' | 'maxStreamsPerGateway'>,
    private readonly open: Gauge,
  ) {}

  /**
   * A stream opened from `peer` (as gRPC names it): counted at once, and refused when over a
   * cap. Its slot is closed when the stream ends, refused or not.
   */
  opened(peer: string): { readonly slot: StreamSlot; readonly refused?: CapRefusal } {
    let closed = false;
    let pending = false;
    const address = peerAddress(peer);
    const slot: StreamSlot = {
      admitted: () => {
        if (!pending) return;
        pending = false;
        const left = (this.#pendingByPeer.get(address) ?? 1) - 1;
        if (left > 0) this.#pendingByPeer.set(address, left);
        else this.#pendingByPeer.delete(address);
      },
      close: () => {
        if (closed) return;
        closed = true;
        this.#setOpen(this.#open - 1);
        slot.admitted();
      },
    };
    this.#setOpen(this.#open + 1);
    if (this.#open > this.limits.maxStreams) {
      return { slot, refused: { limit: 'streams', message: `the controller serves at most ${this.limits.maxStreams} streams at once (--snapshot-max-streams); retry later` } };
    }
    const waiting = this.#pendingByPeer.get(address) ?? 0;
    if (waiting >= MAX_PENDING_PER_PEER) {
      return { slot, refused: { limit: 'pending_per_peer', message: `${waiting} streams from ${address} are waiting to be admitted, the most one address may have; retry later` } };
    }
    this.#pendingByPeer.set(address, waiting + 1);
    pending = true;
    return { slot };
  }

  /** Whether one more stream of `gateway`, which has `admitted` open, is refused. */
  gatewayFull(gateway: string, admitted: number): CapRefusal | undefined {
    if (admitted < this.limits.maxStreamsPerGateway) return undefined;
    return { limit: 'streams_per_gateway', message: `Gateway ${gateway} has ${admitted} streams open, the most one Gateway may have (--snapshot-max-streams-per-gateway); retry later` };
  }

  #setOpen(n: number): void {
    this.#open = n;
    this.open.set(n);
  }
}

/** `ipv4:10.0.0.7:51234` -> `10.0.0.7`, `ipv6:[::1]:51234` -> `::1`: the client's address without its port. */
export function peerAddress(peer: string): string {
  const m = /^(?:ipv[46]:)?\[?([^\]]*?)\]?:\d+$/.exec(peer);
  return m?.[1] ?? peer;
}
