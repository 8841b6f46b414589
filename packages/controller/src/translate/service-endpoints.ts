// A snapshot's table of Service endpoints (ProxySnapshot.endpoints): one entry per Service port
// its routes send to, backends and mirrors. The routes name a Service port; its endpoints are
// here, once, so that an endpoint change is one entry changed while every route to the Service
// stays the object it was (the translator, the snapshot stream and the proxies all reuse routes
// by object, and a route carrying its endpoints would be made anew for each change).
//
// What a translation costs here: a Gateway whose listeners' route lists are the objects they
// were (a listener whose routes are the same objects keeps its list, ./snapshot.ts) has the
// Service ports it had. When a list changed, only the routes that differ from the list at its
// place before (its head and tail are the same objects) are counted in and out of the Gateway's
// counts of backends by Service port, and the ports are sorted again only when one came or
// left: a route added among thousands costs its own backends, not a walk. While the Services and
// EndpointSlices are the same objects (the dependency epoch), its table is the array it was.
// When the epoch changed for some Services or EndpointSlices only (Context.dependencyChange),
// the entries of the others are kept without a lookup; otherwise an entry is made again only
// when its Service port or EndpointSlices are not the objects it was made from.
import type { V1EndpointSlice, V1ServicePort } from '@kubernetes/client-node';
import type { BackendIR, RouteIR, ServiceBackendIR, ServiceEndpointsIR } from '@tollgate/api';
import { serviceEndpoints } from './backendrefs.js';
import type { Context } from './context.js';
import { commonEnds, sameObjects } from './same-objects.js';
import { compareStrings } from './keys.js';

type Lists = readonly (readonly RouteIR[])[];

const routeUses = new WeakMap<RouteIR, readonly ServiceBackendIR[]>();

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

/**
 * How many backends and mirrors of a Gateway's routes name each Service port (by name, with one
 * of them: the name says the namespace, Service and port). Owned by one GatewayTable at a time
 * and changed in place into the next one's (see `table`).
 */
type Counts = Map<string, { readonly backend: ServiceBackendIR; n: number }>;

function count(counts: Counts, routes: readonly RouteIR[], by: 1 | -1): boolean {
  let named = false;
  for (const r of routes) {
    for (const b of serviceBackends(r)) {
      const c = counts.get(b.name);
      if (c === undefined) {
        counts.set(b.name, { backend: b, n: 1 });
        named = true;
      } else if ((c.n += by) === 0) {
        counts.delete(b.name);
        named = true;
      }
    }
  }
  return named;
}

function countAll(lists: Lists): Counts {
  const counts: Counts = new Map();
  for (const routes of lists) count(counts, routes, 1);
  return counts;
}

/** The most routes, over a Gateway's lists, that differ from its last lists for its counts to be changed rather than made again. */
const MAX_RECOUNT = 256;

/**
 * `counts`, of the lists `before`, changed in place to count `lists` by the stretch of each list
 * that differs from the list at its place before (the common head and tail, compared by object,
 * counted already): whether a Service port came or left. Null when that is not the simple case
 * (other listeners, many routes changed): the caller counts afresh.
 */
function recount(counts: Counts, before: Lists, lists: Lists): boolean | null {
  if (before.length !== lists.length) return null;
  const changes: { readonly gone: readonly RouteIR[]; readonly came: readonly RouteIR[] }[] = [];
  let total = 0;
  for (let i = 0; i < lists.length; i++) {
    const was = before[i]!;
    const now = lists[i]!;
    if (was === now) continue;
    const { head, tail } = commonEnds(was, now);
    const change = { gone: was.slice(head, was.length - tail), came: now.slice(head, now.length - tail) };
    if ((total += change.gone.length + change.came.length) > MAX_RECOUNT) return null;
    changes.push(change);
  }
  let named = false;
  // In before out: a port a route leaves and another comes to does not leave in between.
  for (const { came } of changes) named = count(counts, came, 1) || named;
  for (const { gone } of changes) named = count(counts, gone, -1) || named;
  return named;
}

/** A Service port a Gateway's routes use: its name, and where its endpoints are read. */
interface Use {
  readonly name: string;
  /** `<namespace>/<service>`: the key of the Service and of its EndpointSlices. */
  readonly key: string;
  readonly namespace: string;
  readonly service: string;
  readonly port: number;
}

function useOf(b: ServiceBackendIR): Use {
  return { name: b.name, key: `${b.namespace}/${b.service}`, namespace: b.namespace, service: b.service, port: b.port };
}

/**
 * The Service ports counted, sorted by name: `before` when they are the same ones (a route
 * edited or added that names no other Service leaves the list as it was).
 */
function sortedUses(counts: Counts, before: readonly Use[] | undefined): readonly Use[] {
  if (before && before.length === counts.size && before.every((u) => counts.has(u.name))) return before;
  return [...counts.keys()].sort(compareStrings).map((name) => useOf(counts.get(name)!.backend));
}

/** An entry and what it was listed from. */
interface Kept {
  readonly port: V1ServicePort | undefined;
  readonly slices: readonly V1EndpointSlice[];
  readonly entry: ServiceEndpointsIR;
}

/** A Gateway's last table and what it was made from. */
interface GatewayTable {
  readonly lists: Lists;
  readonly epoch: number;
  readonly uses: readonly Use[];
  /** Per use, in order: its entry and what it was made from. */
  readonly kept: readonly Kept[];
  readonly table: readonly ServiceEndpointsIR[];
  /** The counts of `lists`, until the next table of the Gateway takes them (null: taken, or never made). */
  counts: Counts | null;
}

// The last translation's tables by Gateway; replaced whole by each translation's (what a deleted
// Gateway had goes with it).
let keptTables = new Map<string, GatewayTable>();

/** The tables of one translation's snapshots: `table()` per Gateway, then `done()` keeps what the next translation reuses. */
export interface EndpointsTables {
  /** The endpoints of the Service ports the Gateway's route lists send to, sorted by name; [] when they send to none. */
  table(gateway: string, lists: Lists): readonly ServiceEndpointsIR[];
  done(): void;
}

export function endpointsTables(ctx: Context): EndpointsTables {
  // Entries made or confirmed in this translation, by name: Gateways sharing a Service share its entry.
  const entries = new Map<string, Kept>();
  const tables = new Map<string, GatewayTable>();
  const change = ctx.dependencyChange;
  /** `before`, an entry made in epoch `epoch`, when its Service and EndpointSlices are the objects it was made from. */
  const keptOf = (u: Use, before: Kept | undefined, epoch: number | undefined): Kept => {
    const now = entries.get(u.name);
    if (now) return now;
    let kept: Kept;
    // Made in the epoch before this one and its Service's key not among those that changed since: no lookup.
    if (before && change !== null && epoch === change.from && !change.keys.has(u.key) && !change.endpoints.has(u.key)) kept = before;
    else {
      const port = ctx.services.get(u.key)?.spec?.ports?.find((p) => p.port === u.port);
      const slices = ctx.endpointSlices.get(u.key) ?? [];
      kept =
        before && before.port === port && sameObjects(before.slices, slices)
          ? before
          : { port, slices, entry: { name: u.name, endpoints: port ? serviceEndpoints(ctx, u.namespace, u.service, port) : [] } };
    }
    entries.set(u.name, kept);
    return kept;
  };
  return {
    table: (gateway, lists) => {
      const last = keptTables.get(gateway);
      // The last table's counts become this one's: taken first, so that a translation that
      // fails after changing them leaves none behind (the next one counts afresh).
      let counts = last?.counts ?? null;
      if (last) last.counts = null;
      let uses: readonly Use[];
      if (last && sameObjects(last.lists, lists)) uses = last.uses;
      else {
        const named = counts && last ? recount(counts, last.lists, lists) : null;
        if (named === null) counts = countAll(lists);
        uses = named === false ? last!.uses : sortedUses(counts!, last?.uses);
      }
      let made: GatewayTable;
      if (last && uses === last.uses && last.epoch === ctx.dependencyEpoch) made = { ...last, lists, counts };
      else {
        // What each Service port had: by position when the ports are the same, else by name.
        const byName = last && uses !== last.uses ? new Map(last.uses.map((u, i) => [u.name, last.kept[i]!])) : null;
        const kept = uses.map((u, i) => keptOf(u, byName ? byName.get(u.name) : last?.kept[i], last?.epoch));
        const table = kept.map((k) => k.entry);
        made = { lists, epoch: ctx.dependencyEpoch, uses, kept, table: last && sameObjects(last.table, table) ? last.table : table, counts };
      }
      tables.set(gateway, made);
      return made.table;
    },
    done: () => {
      keptTables = tables;
    },
  };
}
