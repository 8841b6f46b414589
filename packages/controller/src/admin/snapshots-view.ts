// What GET /snapshots shows: per Gateway, the version served, since when, where it came from,
// the proxies connected to the stream for it (each with the version it ACKed) and the IR itself;
// then the proxies connected for a Gateway that has no snapshot (yet). Serialized with JSON.stringify, which prints every Secret as [redacted].
import type { SnapshotStore } from '../snapshots/store.js';
import type { ProxyView } from '../snapshots/stream-server.js';

export function snapshotsView(store: SnapshotStore, proxies: ReadonlyMap<string, readonly ProxyView[]> = new Map()): unknown {
  return {
    gateways: store.entries().map((e) => ({
      gateway: e.gateway,
      version: e.version,
      since: e.since.toISOString(),
      origin: { kind: 'Gateway', namespace: e.gateway.split('/')[0], name: e.gateway.split('/')[1], source: e.snapshot.source },
      proxies: proxies.get(e.gateway) ?? [],
      snapshot: e.snapshot,
    })),
    waiting: [...proxies].filter(([gateway]) => !store.get(gateway)).map(([gateway, list]) => ({ gateway, proxies: list })),
  };
}
