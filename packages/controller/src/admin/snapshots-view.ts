// What GET /snapshots shows: per Gateway, the version served, since when, where it came from
// and the IR itself. Serialized with JSON.stringify, which prints every Secret as [redacted].
import type { SnapshotStore } from '../snapshots/store.js';

export function snapshotsView(store: SnapshotStore): unknown {
  return {
    gateways: store.entries().map((e) => ({
      gateway: e.gateway,
      version: e.version,
      since: e.since.toISOString(),
      origin: { kind: 'Gateway', namespace: e.gateway.split('/')[0], name: e.gateway.split('/')[1], source: e.snapshot.source },
      snapshot: e.snapshot,
    })),
  };
}
