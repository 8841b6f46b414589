// The controller's admin server (127.0.0.1:9095 by default), on kit's admin scaffolding
// shared with the proxy: /logging (the JSON per-component contract of docs/admin-api.md that
// `gwctl controller log` speaks), /snapshots, /memory and /debug/pprof.
import { AdminServer as KitAdminServer, jsonLoggingRoutes, memoryRoutes, pprofRoutes, rejectUnknownQuery } from '@tollgate/kit';
import type { Logs } from '../log/components.js';
import type { HostPort } from '../runtime/host-port.js';
import { bindError } from '../runtime/listen.js';
import type { Runnable } from '../runtime/runnable.js';
import type { SnapshotStore } from '../snapshots/store.js';
import type { ProxyView } from '../snapshots/stream-server.js';
import { snapshotsView } from './snapshots-view.js';

export class AdminServer implements Runnable {
  readonly name = 'admin';
  readonly needsLeader = false;
  readonly #server: KitAdminServer;
  #address = '';

  constructor(
    private readonly addr: HostPort,
    logs: Logs,
    store: SnapshotStore,
    private readonly onListening: (address: string) => void,
    proxies: () => ReadonlyMap<string, readonly ProxyView[]> = () => new Map(),
  ) {
    this.#server = new KitAdminServer({
      host: addr.host || '0.0.0.0',
      port: addr.port,
      role: 'admin',
      title: 'Tollgate controller admin',
    });
    const app = this.#server.app;
    jsonLoggingRoutes(app, { logs, onChange: (levels) => logs.get('default').info({ levels }, 'log levels changed') });
    app.get('/snapshots', { config: { index: 'the snapshot of each Gateway: version, origin, connected proxies and their acked version, IR (secrets redacted)' } }, async (request, reply) => {
      if (rejectUnknownQuery(request.query, [], reply)) return reply;
      // JSON.stringify prints every Secret in the IR as [redacted] (Secret.toJSON).
      return reply.type('application/json').send(JSON.stringify(snapshotsView(store, proxies()), null, 2));
    });
    memoryRoutes(app);
    pprofRoutes(app);
  }

  get address(): string {
    return this.#address;
  }

  async start(): Promise<void> {
    try {
      this.#address = await this.#server.listen();
    } catch (err) {
      throw bindError('admin', '--admin-addr', this.addr, (err as { cause?: unknown }).cause ?? err);
    }
    this.onListening(this.#address);
  }

  async stop(): Promise<void> {
    await this.#server.close();
  }
}
