// A TLS bind: a net.Server whose connections are routed by the server name of their
// ClientHello. Passthrough listeners get the client's bytes (ClientHello first) piped to the
// backend as they are: the proxy never holds a key and never decrypts. Terminate listeners
// complete the handshake here and pipe the plaintext. Every stage is bounded: the ClientHello
// must arrive whole (MAX_CLIENT_HELLO_BYTES) within helloTimeoutMs, the connect within
// connectTimeoutMs, an open stream closes after idleMs without a byte, and the bind holds at
// most maxConnections clients (config.maxConnectionsPerBind).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { Tunnel } from '../upstream/tunnel.js';
import { MAX_CLIENT_HELLO_BYTES, readClientHello } from './client-hello.js';
import { listenAt, probePort, type BindSharing } from '../server/bind-sharing.js';
import type { ConnectionSlots } from '../server/connection-slots.js';
import type { TlsTable, TlsTarget } from './tls-table.js';

/** config.tlsClientHelloTimeout default: a real client sends its ClientHello with its first packet. */
export const DEFAULT_TLS_HELLO_TIMEOUT_MS = 10_000;
/** config.tlsIdleTimeout default, as config.websocketIdleTimeout's. */
export const DEFAULT_TLS_IDLE_MS = 300_000;

export interface TlsStreamSettings {
  /** config.tlsClientHelloTimeout: a client must send its whole ClientHello within it. */
  readonly helloTimeoutMs: number;
  /** config.tlsIdleTimeout: a stream with no byte either way for this long is closed. */
  readonly idleMs: number;
  /** config.connectTimeout: the backend connection. */
  readonly connectTimeoutMs: number;
  /** config.maxConnectionsPerBind. */
  readonly maxConnections: number;
}

/** What became of a connection (the `outcome` label of tollgate_tls_connections_total). */
export type TlsOutcome =
  | 'forwarded'
  | 'no_sni'
  | 'no_route'
  | 'not_tls'
  | 'hello_timeout'
  | 'handshake_failed'
  | 'no_backend'
  | 'invalid_backend'
  | 'no_endpoint'
  | 'backend_unreachable'
  | 'connection_limit';

export interface TlsStreamDeps {
  readonly settings: TlsStreamSettings;
  readonly log: Logger;
  /** Counts a connection's outcome; listener and route null when none was chosen. */
  readonly count: (listener: string | null, route: string | null, outcome: TlsOutcome) => void;
  /** With worker threads: the table that makes settings.maxConnections hold for all of them. */
  readonly connectionSlots?: ConnectionSlots;
}

export class TlsStreamServer {
  readonly #server: Server;
  readonly #tunnels = new Set<Tunnel>();
  readonly #pending = new Set<Socket>();
  #table: TlsTable;

  constructor(
    readonly port: number,
    readonly address: string,
    table: TlsTable,
    readonly deps: TlsStreamDeps,
  ) {
    this.#table = table;
    this.#server = createServer({ pauseOnConnect: false }, (socket) => this.#accept(socket));
    this.#server.maxConnections = deps.settings.maxConnections;
    this.#server.on('drop', () => deps.count(null, null, 'connection_limit'));
    deps.connectionSlots?.guard(this.#server, `${address}:${port}`, deps.settings.maxConnections, () => deps.count(null, null, 'connection_limit'));
  }

  /** The routes of the next connections (connections already open keep their backend). */
  use(table: TlsTable): void {
    this.#table = table;
  }

  async listen(sharing: BindSharing | null = null): Promise<void> {
    await probePort(sharing, this.address, this.port);
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(listenAt(sharing, this.address, this.port), () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  get boundPort(): number {
    const a = this.#server.address();
    return typeof a === 'object' && a ? a.port : this.port;
  }

  /** Stops accepting; streams open carry on until `deadlineMs`, then are closed. */
  async close(deadlineMs: number): Promise<void> {
    for (const s of this.#pending) s.destroy();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    const timer = setTimeout(() => {
      for (const t of this.#tunnels) t.close('drain');
    }, deadlineMs);
    try {
      await closed;
    } finally {
      clearTimeout(timer);
    }
  }

  #accept(socket: Socket): void {
    const { settings, count } = this.deps;
    this.#pending.add(socket);
    let received: Buffer = Buffer.alloc(0);
    const refuse = (outcome: TlsOutcome, listener: string | null = null, route: string | null = null): void => {
      cleanup();
      count(listener, route, outcome);
      socket.destroy();
    };
    const clearDeadline = deadline(settings.helloTimeoutMs, () => refuse('hello_timeout'));
    const cleanup = (): void => {
      clearDeadline();
      socket.off('data', onData);
      this.#pending.delete(socket);
    };
    const onData = (chunk: Buffer): void => {
      received = received.length ? Buffer.concat([received, chunk]) : chunk;
      const hello = readClientHello(received);
      if (hello.kind === 'incomplete') {
        // readClientHello refuses a record longer than the bound, so this is a safety net only.
        if (received.length > MAX_CLIENT_HELLO_BYTES) refuse('not_tls');
        return;
      }
      if (hello.kind === 'invalid') return refuse('not_tls');
      if (hello.serverName === null) return refuse('no_sni');
      const target = this.#table.target(hello.serverName);
      if (!target) return refuse('no_route');
      cleanup();
      socket.pause();
      this.#route(socket, received, target);
    };
    socket.on('data', onData);
    socket.on('error', () => {}); // a reset before routing: nothing to answer
    socket.once('close', () => {
      if (this.#pending.has(socket)) cleanup();
    });
  }

  #route(socket: Socket, head: Buffer, target: TlsTarget): void {
    const { listener, route } = target;
    const { count } = this.deps;
    if (target.secureContext === null) return this.#pipe(socket, head, target);
    // Terminate: the ClientHello goes back in front of the stream for the handshake here.
    socket.unshift(head);
    const tls = new TLSSocket(socket, { isServer: true, secureContext: target.secureContext });
    const clearDeadline = deadline(this.deps.settings.helloTimeoutMs, () => tls.destroy());
    tls.once('secure', () => {
      clearDeadline();
      this.#pipe(tls, Buffer.alloc(0), target);
    });
    tls.once('error', () => {
      clearDeadline();
      count(listener.name, route.name, 'handshake_failed');
      tls.destroy();
    });
  }

  #pipe(client: Socket, head: Buffer, { listener, route }: TlsTarget): void {
    const { settings, count, log } = this.deps;
    const to = this.#table.destination(route, Math.random());
    if ('closed' in to) {
      count(listener.name, route.name, to.closed as TlsOutcome);
      client.destroy();
      return;
    }
    const backend = connect({ host: to.host, port: to.port, timeout: settings.connectTimeoutMs });
    const fail = (): void => {
      count(listener.name, route.name, 'backend_unreachable');
      log.debug({ route: route.name, backend: to.backend }, `TLS route ${route.name}: backend ${to.backend} (${to.host}:${to.port}) unreachable; connection closed`);
      backend.destroy();
      client.destroy();
    };
    backend.once('timeout', fail);
    backend.once('error', fail);
    backend.once('connect', () => {
      backend.off('timeout', fail);
      backend.off('error', fail);
      backend.setTimeout(0);
      count(listener.name, route.name, 'forwarded');
      const tunnel = new Tunnel(client, backend, { idleMs: settings.idleMs, onClose: () => this.#tunnels.delete(tunnel) });
      this.#tunnels.add(tunnel);
      tunnel.start(head);
      client.resume();
    });
    client.once('close', () => {
      if (backend.connecting) backend.destroy();
    });
  }
}

/**
 * Runs `expire` once `ms` have passed, unless the returned function is called first. The loop
 * runs its timers before it reads its sockets, so when it was busy past the deadline, bytes the
 * peer sent in time may be waiting unread: `expire` waits for the loop to read them (an
 * immediate runs after), and what they complete clears it. Cutting a socket with bytes unread
 * would also reset the connection rather than close it.
 */
export function deadline(ms: number, expire: () => void): () => void {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => (immediate = setImmediate(expire)), ms);
  return () => {
    clearTimeout(timer);
    clearImmediate(immediate);
  };
}
