// The ready endpoints of each Service port, kept across configs: what the picker of a Service
// backend reads. A snapshot lists them apart from its routes (ProxySnapshot.endpoints), so an
// endpoint change is one set changed here while every compiled route to the Service is kept
// (./compile.ts keeps a route's compiled form by route object): the picker sees the set's new
// generation at its next pick and takes the new endpoints then.
//
// A set changes only when a snapshot is committed (the runtime's switch): a config refused
// after its compile leaves the serving snapshot's endpoints as they were.
import type { EndpointIR, ServiceEndpointsIR } from '@tollgate/api';

/** One Service port's ready endpoints; `generation` counts the changes, for the pickers holding it. */
export class EndpointSet {
  endpoints: readonly EndpointIR[] = [];
  generation = 0;
}

function sameEndpoints(a: readonly EndpointIR[], b: readonly EndpointIR[]): boolean {
  // The decoder keeps the entries it already had: an unchanged Service port's are the same array.
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.address !== b[i]!.address || a[i]!.port !== b[i]!.port) return false;
  return true;
}

/** The snapshot's endpoints by Service port name (an absent name has none). */
export function endpointsByName(table: readonly ServiceEndpointsIR[] | undefined): ReadonlyMap<string, readonly EndpointIR[]> {
  return new Map((table ?? []).map((e) => [e.name, e.endpoints]));
}

export class ServiceEndpoints {
  readonly #sets = new Map<string, EndpointSet>();

  /** The set of that name (created empty until a commit fills it): what a compiled picker holds. */
  set(name: string): EndpointSet {
    let s = this.#sets.get(name);
    if (!s) this.#sets.set(name, (s = new EndpointSet()));
    return s;
  }

  /**
   * Makes the sets what a committed snapshot says: `used` holds the endpoints of every Service
   * port its routes send to. A set whose endpoints are unchanged keeps its generation (its
   * pickers keep what they built); the sets of names no longer used are dropped.
   */
  commit(used: ReadonlyMap<string, readonly EndpointIR[]>): void {
    for (const [name, endpoints] of used) {
      const s = this.set(name);
      if (sameEndpoints(s.endpoints, endpoints)) continue;
      s.endpoints = endpoints;
      s.generation++;
    }
    for (const name of this.#sets.keys()) if (!used.has(name)) this.#sets.delete(name);
  }
}
