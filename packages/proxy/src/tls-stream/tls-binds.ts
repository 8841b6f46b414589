// The TLS binds of the running proxy (ProxySnapshot.tlsBinds), kept across configs like the
// HTTP binds: a config's tables are built first (a certificate node:tls refuses fails there),
// its new ports opened, and only at the commit do connections get the new routes and removed
// ports close. A refused config closes the ports it opened and changes nothing else.
import type { TlsBindIR } from '@tollgate/api';
import { TlsTable } from './tls-table.js';
import { TlsStreamServer, type TlsStreamDeps } from './tls-server.js';
import type { BindSharing } from '../server/bind-sharing.js';

export interface TlsBindsPlan {
  /** Switches connections to the config's routes and closes the ports it no longer has. */
  commit(): void;
  /** Closes what the plan opened. */
  rollback(): Promise<void>;
}

function bindKey(b: { readonly address: string; readonly port: number }): string {
  return `${b.address}:${b.port}`;
}

export class TlsBinds {
  readonly #servers = new Map<string, TlsStreamServer>();

  constructor(
    readonly deps: TlsStreamDeps,
    /** How long removed ports let their streams run (config.drainTimeout). */
    readonly drainMs: () => number,
    /** How the ports are shared with the other worker threads (null: one thread serves them). */
    readonly sharing: BindSharing | null = null,
  ) {}

  get listening(): { address: string; port: number; boundPort: number }[] {
    return [...this.#servers.values()].map((s) => ({ address: s.address, port: s.port, boundPort: s.boundPort }));
  }

  /** Builds the tables of `binds` and listens on their new ports. */
  async prepare(binds: readonly TlsBindIR[]): Promise<TlsBindsPlan> {
    const tables = new Map(binds.map((b) => [bindKey(b), new TlsTable(b)]));
    const started: [string, TlsStreamServer][] = [];
    try {
      for (const [key, table] of tables) {
        if (this.#servers.has(key)) continue;
        const server = new TlsStreamServer(table.bind.port, table.bind.address, table, this.deps);
        await server.listen(this.sharing);
        started.push([key, server]);
      }
    } catch (err) {
      await Promise.allSettled(started.map(([, s]) => s.close(0)));
      throw err;
    }
    return {
      commit: () => {
        for (const [key, server] of started) this.#servers.set(key, server);
        for (const [key, server] of this.#servers) {
          const table = tables.get(key);
          if (table) server.use(table);
          else {
            this.#servers.delete(key);
            this.deps.log.info({ bind: key }, `TLS bind ${key} removed from the config; closing after its streams`);
            void server.close(this.drainMs());
          }
        }
      },
      rollback: async () => {
        await Promise.allSettled(started.map(([, s]) => s.close(0)));
      },
    };
  }

  async close(): Promise<void> {
    const servers = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.allSettled(servers.map((s) => s.close(this.drainMs())));
  }
}
