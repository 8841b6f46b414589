// An upgraded connection (a WebSocket once the backend answered 101): the client's socket and
// the backend's joined, bytes piped both ways as they come, with backpressure (a side that does
// not read pauses the other), nothing parsed. It is bounded by an idle timeout (no byte either
// way for that long closes both sides) and ends as a whole: whichever side ends, fails or goes
// idle, both are closed: ended (FIN, after what was already received is written), then
// destroyed once ended, or at once when the closing side can no longer be written to.
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** Which end closed the tunnel first, or what closed it. */
export type TunnelEnd = 'client' | 'backend' | 'client_error' | 'backend_error' | 'idle' | 'drain';

export interface TunnelStats {
  /** Bytes received from the client and written to the backend (after the upgrade request). */
  readonly fromClient: number;
  /** Bytes received from the backend and written to the client (after its 101). */
  readonly toClient: number;
  readonly durationMs: number;
  readonly closedBy: TunnelEnd;
}

export interface TunnelOptions {
  /** No byte either way for this long closes the tunnel. */
  readonly idleMs: number;
  /** Each chunk as it passes (metrics). */
  readonly onBytes?: (direction: 'fromClient' | 'toClient', n: number) => void;
  /** Once, when both sockets are closed. */
  readonly onClose: (stats: TunnelStats) => void;
}

/**
 * How long a closing tunnel waits for its sockets to flush and end before destroying them: a
 * peer that stopped reading would otherwise hold its socket (and the proxy's drain) open.
 */
export const TUNNEL_CLOSE_GRACE_MS = 1_000;

export class Tunnel {
  #fromClient = 0;
  #toClient = 0;
  #closedBy: TunnelEnd | null = null;
  #open = 2;
  #grace: NodeJS.Timeout | undefined;
  readonly #startedAt = performance.now();

  constructor(
    readonly client: Duplex,
    readonly backend: Duplex,
    readonly options: TunnelOptions,
  ) {}

  /** Starts the piping; `head`: bytes the client sent after its upgrade request, the backend's first. */
  start(head: Buffer): void {
    const { client, backend, options } = this;
    for (const [side, other, name] of [
      [client, backend, 'client'],
      [backend, client, 'backend'],
    ] as const) {
      side.on('data', (chunk: Buffer) => {
        if (name === 'client') this.#fromClient += chunk.length;
        else this.#toClient += chunk.length;
        options.onBytes?.(name === 'client' ? 'fromClient' : 'toClient', chunk.length);
      });
      // The peer's FIN is passed on (pipe ends the other side), so a clean WebSocket close ends both.
      side.on('end', () => this.#closing(name));
      side.on('error', () => this.#closing(`${name}_error`));
      side.on('close', () => {
        this.#closing(name);
        // Nothing more can come from this side: the other is ended too.
        this.#end(other);
        if (--this.#open === 0) this.#done();
      });
      (side as Socket).setTimeout?.(options.idleMs, () => this.close('idle'));
    }
    if (head.length) {
      this.#fromClient += head.length;
      options.onBytes?.('fromClient', head.length);
      backend.write(head);
    }
    client.pipe(backend);
    backend.pipe(client);
  }

  /** Closes both sides (idle, the proxy's drain): ended, destroyed if they have not closed after the grace. */
  close(reason: TunnelEnd): void {
    this.#closing(reason);
    this.#end(this.client);
    this.#end(this.backend);
  }

  get closed(): boolean {
    return this.#open === 0;
  }

  #closing(reason: TunnelEnd): void {
    if (this.#closedBy !== null) return;
    this.#closedBy = reason;
    // From now on a side that does not finish within the grace is cut.
    this.#grace = setTimeout(() => {
      this.client.destroy();
      this.backend.destroy();
    }, TUNNEL_CLOSE_GRACE_MS);
    this.#grace.unref();
  }

  #end(side: Duplex): void {
    if (side.destroyed) return;
    if (side.writableEnded) return;
    side.end(() => side.destroy());
  }

  #done(): void {
    if (this.#grace) clearTimeout(this.#grace);
    this.options.onClose({ fromClient: this.#fromClient, toClient: this.#toClient, durationMs: performance.now() - this.#startedAt, closedBy: this.#closedBy ?? 'client' });
  }
}
