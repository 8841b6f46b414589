// The payloads the stream sends, per Gateway. A push is a delta when the proxy holds a version
// whose routes the cache still has (a base): routes unchanged since are sent as their positions
// in it, so a one-route change costs one route's text whatever the Gateway's size. Otherwise the
// push is the full form. Each payload is encoded once per (version, base) and sent to every
// proxy it fits; a base is kept only while the owner of the proxies' state says some proxy holds
// it or it is current (sweep()).
import { encodeSnapshotDelta, encodeSnapshotParts, endpointPositions, routePositions, type ProxySnapshot, type RouteIR, type ServiceEndpointsIR, type SnapshotParts } from '@tollgate/api';
import { PreparedPayload } from '@tollgate/api/snapshot-stream';
import type { Counter } from 'prom-client';

export type PayloadForm = 'full' | 'delta';

/** A version a proxy may hold, kept to encode deltas against it. */
interface Base {
  readonly snapshot: ProxySnapshot;
  /** routePositions(snapshot) and endpointPositions(snapshot), each made when a delta first needs it. */
  routes: Map<RouteIR, number> | null;
  entries: Map<ServiceEndpointsIR, number> | null;
}

/** The payloads of a Gateway's current version: the full form, and a delta per base version. */
interface Encoded {
  readonly version: string;
  full: PreparedPayload | null;
  readonly deltas: Map<string, PreparedPayload>;
}

export class PayloadCache {
  readonly #encoded = new Map<string, Encoded>();
  /** Per Gateway, the versions a delta may be relative to. */
  readonly #bases = new Map<string, Map<string, Base>>();

  /** `encodings` counts each payload encoded, by form. */
  constructor(private readonly encodings: Counter<'form'>) {}

  /**
   * The payload of `current` (the Gateway's current version) for a proxy holding `held`: a delta
   * when `held` is a base the cache has, else the full form (`held` null: the proxy takes no
   * delta now). `current` becomes a base.
   */
  payload(gateway: string, current: { readonly version: string; readonly snapshot: ProxySnapshot }, held: string | null): { readonly payload: PreparedPayload; readonly form: PayloadForm } {
    let enc = this.#encoded.get(gateway);
    if (enc?.version !== current.version) {
      enc = { version: current.version, full: null, deltas: new Map() };
      this.#encoded.set(gateway, enc);
    }
    let bases = this.#bases.get(gateway);
    if (!bases) this.#bases.set(gateway, (bases = new Map<string, Base>()));
    if (!bases.has(current.version)) bases.set(current.version, { snapshot: current.snapshot, routes: null, entries: null });
    const base = held === null ? undefined : bases.get(held);
    if (base && held !== null) {
      let delta = enc.deltas.get(held);
      if (!delta) {
        // The routes' positions are looked up only for what the lists do not share with the base's (made when first needed).
        const positions = () => (base.routes ??= routePositions(base.snapshot));
        delta = this.#prepare(encodeSnapshotDelta(current.snapshot, { version: held, positions, entries: (base.entries ??= endpointPositions(base.snapshot)), snapshot: base.snapshot }), 'delta');
        enc.deltas.set(held, delta);
      }
      return { payload: delta, form: 'delta' };
    }
    enc.full ??= this.#prepare(encodeSnapshotParts(current.snapshot), 'full');
    return { payload: enc.full, form: 'full' };
  }

  /** Drops the Gateway's bases not in `keep` (the current version and what its proxies hold or are being sent). */
  sweep(gateway: string, keep: ReadonlySet<string | null | undefined>): void {
    const bases = this.#bases.get(gateway);
    if (!bases) return;
    for (const v of bases.keys()) if (!keep.has(v)) bases.delete(v);
    if (!bases.size) this.#bases.delete(gateway);
  }

  /** The Gateway is gone from the store: its payloads and bases go too. */
  forget(gateway: string): void {
    this.#encoded.delete(gateway);
    this.#bases.delete(gateway);
  }

  /** Versions kept as delta bases of the Gateway. */
  baseVersions(gateway: string): string[] {
    return [...(this.#bases.get(gateway)?.keys() ?? [])];
  }

  #prepare(parts: SnapshotParts, form: PayloadForm): PreparedPayload {
    this.encodings.inc({ form });
    return new PreparedPayload({
      snapshot: Buffer.from(parts.skeleton, 'utf8'),
      routes: parts.routes.map((r) => Buffer.from(r, 'utf8')),
      routeCounts: parts.routeCounts,
      baseVersion: parts.base?.version ?? '',
      routeRefs: parts.base?.refs ?? [],
      endpoints: (parts.endpoints ?? []).map((e) => Buffer.from(e, 'utf8')),
      endpointRefs: parts.base?.endpointRefs ?? [],
    });
  }
}
