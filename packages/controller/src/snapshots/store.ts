// The snapshots the controller serves, one per Gateway (`<namespace>/<name>`). Each reconcile
// offers the new set: a changed version replaces the entry, an unchanged one keeps it (and its
// time), a Gateway no longer served is dropped. A snapshot that fails validation never
// replaces the last good one of its Gateway. The snapshot server (proxies' stream) reads here.
import type { ProxySnapshot } from '@tollgate/api';

export interface SnapshotEntry {
  readonly gateway: string;
  readonly version: string;
  readonly snapshot: ProxySnapshot;
  /** When this version became current. */
  readonly since: Date;
}

export interface OfferResult {
  readonly changed: string[];
  readonly removed: string[];
  /** Gateways whose new snapshot was refused; the previous one (if any) stays. */
  readonly refused: { gateway: string; reason: string }[];
}

/** `previous`: the Gateway's snapshot stored now, if any (the check may look only at what differs from it). */
export type SnapshotCheck = (snapshot: ProxySnapshot, previous?: ProxySnapshot) => string | undefined;

export class SnapshotStore {
  readonly #entries = new Map<string, SnapshotEntry>();
  readonly #listeners: ((r: OfferResult) => void)[] = [];

  constructor(private readonly check: SnapshotCheck = () => undefined) {}

  offer(snapshots: ReadonlyMap<string, ProxySnapshot>, now = new Date()): OfferResult {
    const result: OfferResult = { changed: [], removed: [], refused: [] };
    for (const [gateway, snapshot] of snapshots) {
      const prev = this.#entries.get(gateway);
      if (prev?.version === snapshot.version) continue;
      const reason = this.check(snapshot, prev?.snapshot);
      if (reason !== undefined) {
        result.refused.push({ gateway, reason });
        continue;
      }
      this.#entries.set(gateway, { gateway, version: snapshot.version, snapshot, since: now });
      result.changed.push(gateway);
    }
    for (const gateway of [...this.#entries.keys()]) {
      if (!snapshots.has(gateway)) {
        this.#entries.delete(gateway);
        result.removed.push(gateway);
      }
    }
    if (result.changed.length || result.removed.length) for (const l of this.#listeners) l(result);
    return result;
  }

  get(gateway: string): SnapshotEntry | undefined {
    return this.#entries.get(gateway);
  }

  /** In gateway order. */
  entries(): SnapshotEntry[] {
    return [...this.#entries.values()].sort((a, b) => (a.gateway < b.gateway ? -1 : a.gateway > b.gateway ? 1 : 0));
  }

  onChange(listener: (r: OfferResult) => void): void {
    this.#listeners.push(listener);
  }
}
