// Gateways a proxy refused a snapshot of. A Gateway stays rejected until every proxy connected
// for it has ACKed a version other than the refused one (a proxy that refused, or holds nothing
// or the refused version, holds the rejection); its Programmed condition says so.

export interface Rejection {
  readonly version: string;
  readonly pod: string;
  readonly error: string;
}

/** What a rejection is settled against: a connected proxy of the Gateway. */
export interface ProxyStanding {
  readonly acked: string | null;
  /** It refused a version and has ACKed none since. */
  readonly refusing: boolean;
}

export class Rejections {
  readonly #rejected = new Map<string, Rejection>();

  get(gateway: string): Rejection | undefined {
    return this.#rejected.get(gateway);
  }

  /** A proxy refused a version; true when this changes the Gateway's rejection (a new version or reason). */
  refused(gateway: string, r: Rejection): boolean {
    const was = this.#rejected.get(gateway);
    this.#rejected.set(gateway, r);
    return was?.version !== r.version || was.error !== r.error;
  }

  /** Ends the Gateway's rejection when no proxy of `proxies` holds it back; true when it ended. */
  settle(gateway: string, proxies: Iterable<ProxyStanding>): boolean {
    const r = this.#rejected.get(gateway);
    if (!r) return false;
    for (const p of proxies) if (p.acked === null || p.acked === r.version || p.refusing) return false;
    this.#rejected.delete(gateway);
    return true;
  }

  /** The Gateway is gone (a Gateway created again under its name starts clean). */
  forget(gateway: string): void {
    this.#rejected.delete(gateway);
  }
}
