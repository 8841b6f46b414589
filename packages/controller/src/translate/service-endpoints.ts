// A snapshot's table of Service endpoints (ProxySnapshot.endpoints): one entry per Service port
// its routes send to, backends and mirrors. The routes name a Service port; its endpoints are
// here, once, so that an endpoint change is one entry changed while every route to the Service
// stays the object it was (the translator, the snapshot stream and the proxies all reuse routes
// by object, and a route carrying its endpoints would be made anew for each change).
//
// What a translation walks: the Service ports of each listener's route list, kept by list
// object (a listener whose routes are the same objects keeps its list, ./snapshot.ts), so an
// unchanged listener costs a lookup; an entry is kept while its Service port and EndpointSlices
// are the same objects, so the endpoints of an unchanged Service are not listed again.
import type { V1EndpointSlice, V1ServicePort } from '@kubernetes/client-node';
import type { BackendIR, RouteIR, ServiceBackendIR, ServiceEndpointsIR } from '@tollgate/api';
import { serviceEndpoints } from './backendrefs.js';
import type { Context } from './context.js';
import { compareStrings } from './keys.js';

type Uses = ReadonlyMap<string, ServiceBackendIR>;

const routeUses = new WeakMap<RouteIR, readonly ServiceBackendIR[]>();
const listUses = new WeakMap<readonly RouteIR[], Uses>();

/** The `service` backends a route sends to: its backendRefs' and its mirrors'. */
function serviceBackends(route: RouteIR): readonly ServiceBackendIR[] {
  let out = routeUses.get(route);
  if (out === undefined) {
    const all: BackendIR[] = [...route.backends];
    for (const f of route.filters) if (f.type === 'RequestMirror') all.push(f.backend);
    out = all.filter((b): b is ServiceBackendIR => b.kind === 'service');
    routeUses.set(route, out);
  }
  return out;
}

/** The Service ports of a listener's routes, by name. */
function usesOf(routes: readonly RouteIR[]): Uses {
  let out = listUses.get(routes);
  if (out === undefined) {
    const map = new Map<string, ServiceBackendIR>();
    for (const r of routes) for (const b of serviceBackends(r)) if (!map.has(b.name)) map.set(b.name, b);
    listUses.set(routes, (out = map));
  }
  return out;
}

/** An entry and what it was listed from. */
interface Kept {
  readonly port: V1ServicePort | undefined;
  readonly slices: readonly V1EndpointSlice[];
  readonly entry: ServiceEndpointsIR;
}

// The entries of the last translation by name; replaced whole by each table (never outgrows one).
let kept = new Map<string, Kept>();

function sameSlices(a: readonly V1EndpointSlice[], b: readonly V1EndpointSlice[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/** The endpoints of the Service ports the route lists send to, sorted by name; [] when they send to none. */
function endpointsTable(lists: Iterable<readonly RouteIR[]>, ctx: Context, next: Map<string, Kept>): ServiceEndpointsIR[] {
  const wanted = new Map<string, ServiceBackendIR>();
  for (const routes of lists) for (const [name, b] of usesOf(routes)) if (!wanted.has(name)) wanted.set(name, b);
  const out: ServiceEndpointsIR[] = [];
  for (const name of [...wanted.keys()].sort(compareStrings)) {
    const b = wanted.get(name)!;
    const key = `${b.namespace}/${b.service}`;
    const port = ctx.services.get(key)?.spec?.ports?.find((p) => p.port === b.port);
    const slices = ctx.endpointSlices.get(key) ?? [];
    const before = next.get(name) ?? kept.get(name);
    const entry =
      before && before.port === port && sameSlices(before.slices, slices)
        ? before.entry
        : { name, endpoints: port ? serviceEndpoints(ctx, b.namespace, b.service, port) : [] };
    next.set(name, { port, slices, entry });
    out.push(entry);
  }
  return out;
}

/** The tables of one translation's snapshots: `table(lists)` per Gateway, then `done()` keeps the entries for the next translation. */
export interface EndpointsTables {
  table(lists: Iterable<readonly RouteIR[]>): ServiceEndpointsIR[];
  done(): void;
}

export function endpointsTables(ctx: Context): EndpointsTables {
  const next = new Map<string, Kept>();
  return {
    table: (lists) => endpointsTable(lists, ctx, next),
    done: () => {
      kept = next;
    },
  };
}
