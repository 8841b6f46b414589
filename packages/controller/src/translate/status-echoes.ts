// The controller writes the status of the objects it translates, and the API server hands each
// write back as a new object: equal to the one before in everything translation reads (its
// spec and metadata), different in its status, resourceVersion and managedFields, which
// translation never reads. Every memo of the translator is keyed by object (informer caches
// hand out the same object until it changes), so each echo used to cost the object its
// translation: its rules and route IRs made again, its policy converted again, and the next
// snapshot carrying new objects the proxies compile again. After a bulk apply of thousands of
// routes, the echoes of their status writes made every route new at once (a translation as slow
// as a cold one, and the next change sent every route again).
//
// So before translation, an object whose spec and metadata (but resourceVersion and
// managedFields) are those of the object it replaces under the same key is taken as that one,
// and a list whose objects all come out as the ones of the last list is that list, the same
// array: what compares lists by object sees no change. Only the stretch of a list that differs
// from the last one by object is looked at (informer caches replace objects where they were),
// and only an object whose key held another is compared with it, field by field.
import { keyOf } from './keys.js';
import { commonEnds, sameObjects } from './same-objects.js';
import type { Resources } from './types.js';

export type Keyed = { readonly metadata: { readonly namespace?: string; readonly name: string } };

/** Whether two objects differ in their status (and the resourceVersion and managedFields that change with it) alone. */
export function sameButStatus(a: Keyed, b: Keyed): boolean {
  if (a === b) return true;
  const x = a as unknown as Readonly<Record<string, unknown>>;
  const y = b as unknown as Readonly<Record<string, unknown>>;
  return sameFields(x, y, TOP, 0) && sameFields(x.metadata as Readonly<Record<string, unknown>>, y.metadata as Readonly<Record<string, unknown>>, META, 0);
}

/** What is left out of the comparison: at the top, the status and the metadata (compared apart); in the metadata, what a status write changes. */
const TOP: ReadonlySet<string> = new Set(['status', 'metadata']);
const META: ReadonlySet<string> = new Set(['resourceVersion', 'managedFields']);
const NONE: ReadonlySet<string> = new Set();

/** Deeper than this, two values count as different (the object is taken as changed, as it would be without this file). */
const MAX_DEPTH = 32;

/** Whether two JSON values are equal, the keys in `skip` left out at this level. */
function sameFields(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>, skip: ReadonlySet<string>, depth: number): boolean {
  let count = 0;
  for (const key in a) {
    if (skip.has(key)) continue;
    count++;
    if (!Object.hasOwn(b, key) || !sameValue(a[key], b[key], depth + 1)) return false;
  }
  for (const key in b) if (!skip.has(key)) count--;
  return count === 0;
}

function sameValue(a: unknown, b: unknown, depth: number): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || depth > MAX_DEPTH) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i], depth + 1)) return false;
    return true;
  }
  return !Array.isArray(b) && sameFields(a as Readonly<Record<string, unknown>>, b as Readonly<Record<string, unknown>>, NONE, depth);
}

interface Seen<T> {
  /** A copy of the list as given (a caller may reuse and change its array between calls). */
  readonly given: readonly T[];
  /** What was handed out for it, place by place. */
  readonly out: readonly T[];
  /** The object handed out for each key: owned here, changed with each list. */
  readonly byKey: Map<string, T>;
}

// By kind: the list given last and what was handed out for it.
const last = new Map<string, Seen<Keyed>>();

/** `items` with every object that echoes the one before it under its key replaced by that one; the last list handed out when that is all of them. */
export function withoutEchoes<T extends Keyed>(kind: string, items: readonly T[]): readonly T[] {
  const before = last.get(kind) as Seen<T> | undefined;
  if (!before) {
    const given = [...items];
    const byKey = new Map<string, T>();
    for (const o of given) byKey.set(keyOf(o.metadata), o);
    return remember(kind, { given, out: given, byKey });
  }
  const old = before.given;
  const { head: start, tail: end } = commonEnds(old, items);
  if (start === old.length && start === items.length) return before.out;
  // The common head and tail are the objects handed out for them last time; the stretch between
  // is looked up by key, before the keys of the objects that left it are let go.
  const byKey = before.byKey;
  const middle = items.slice(start, items.length - end).map((o) => kept(byKey, o));
  for (let i = start; i < old.length - end; i++) {
    const o = before.out[i]!;
    const key = keyOf(o.metadata);
    if (byKey.get(key) === o) byKey.delete(key);
  }
  for (const o of middle) byKey.set(keyOf(o.metadata), o);
  const out = [...before.out.slice(0, start), ...middle, ...before.out.slice(old.length - end)];
  return remember(kind, { given: [...items], out: sameObjects(out, before.out) ? before.out : out, byKey });
}

/** The object handed out last time under this object's key, when this one echoes it; else this one. */
function kept<T extends Keyed>(byKey: ReadonlyMap<string, T>, o: T): T {
  const was = byKey.get(keyOf(o.metadata));
  return was !== undefined && was !== o && sameButStatus(was, o) ? was : o;
}

function remember<T extends Keyed>(kind: string, seen: Seen<T>): readonly T[] {
  last.set(kind, seen);
  return seen.out;
}

/** The resources with the status echoes of every kind the controller writes the status of taken as the objects they echo. */
export function settled(r: Resources): Resources {
  return {
    ...r,
    gatewayClasses: withoutEchoes('GatewayClass', r.gatewayClasses),
    gateways: withoutEchoes('Gateway', r.gateways),
    ...(r.listenerSets ? { listenerSets: withoutEchoes('ListenerSet', r.listenerSets) } : {}),
    httpRoutes: withoutEchoes('HTTPRoute', r.httpRoutes),
    grpcRoutes: withoutEchoes('GRPCRoute', r.grpcRoutes),
    ...(r.tlsRoutes ? { tlsRoutes: withoutEchoes('TLSRoute', r.tlsRoutes) } : {}),
    gatewayPolicies: withoutEchoes('GatewayPolicy', r.gatewayPolicies),
    // Older callers leave the Backends out (dependency-indexes.ts reads them as none).
    ...((r.backends as Resources['backends'] | undefined) ? { backends: withoutEchoes('Backend', r.backends) } : {}),
    backendTLSPolicies: withoutEchoes('BackendTLSPolicy', r.backendTLSPolicies),
  };
}
