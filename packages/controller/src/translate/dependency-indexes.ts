// The indexes of what routes, Backends and policies are translated from besides themselves:
// Services, EndpointSlices, ReferenceGrants, Backends, BackendTLSPolicies, Secrets and
// ConfigMaps. They are kept from one translation to the next, with an epoch that changes when
// any of those lists is not the same objects in the same order as the last translation's.
//
// A change of epoch does not tell what changed, and a route checked in the previous epoch would
// have to compare all its dependencies again: at thousands of routes, an endpoint of one
// Service becoming ready would re-check every route. So when only Services, EndpointSlices and
// Backends differ (a rollout, a scale, a Service edited), the epoch says which keys
// (`<namespace>/<name>`) did, telling the Services whose endpoints alone changed (what route
// rules do not read) from the others: whatever depends on other keys only is as it was. A change in any
// other list (a ReferenceGrant, a Secret, a ConfigMap, a BackendTLSPolicy) says nothing of keys:
// everything is checked again, as before.
//
// Each index is made again only when its own lists changed.
import type { V1ConfigMap, V1EndpointSlice, V1Secret, V1Service } from '@kubernetes/client-node';
import type { TollgateBackend } from '../types/gateway-api.js';
import { indexBackendTls, type BackendTlsIndex } from './backendtlspolicy.js';
import { byKey, compareStrings, keyOf } from './keys.js';
import { ReferenceGrants } from './referencegrant.js';
import { sameObjects } from './same-objects.js';
import { slicePortsKey } from './slice-ports.js';
import type { Resources } from './types.js';

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export interface DependencyIndexes {
  /** Services by `<namespace>/<name>`. */
  readonly services: ReadonlyMap<string, V1Service>;
  /** Backend resources by `<namespace>/<name>`, in key order. */
  readonly backends: ReadonlyMap<string, TollgateBackend>;
  /** EndpointSlices by `<namespace>/<service>`, sorted by name. */
  readonly endpointSlices: ReadonlyMap<string, readonly V1EndpointSlice[]>;
  readonly grants: ReferenceGrants;
  /** BackendTLSPolicies by the Service ports they target. */
  readonly backendTls: BackendTlsIndex;
  /** ConfigMaps read whole (those parametersRefs and policies reference), by `<namespace>/<name>`. */
  readonly configMaps: ReadonlyMap<string, V1ConfigMap>;
  /** Secrets read whole (those listeners and policies reference), by `<namespace>/<name>`. */
  readonly secrets: ReadonlyMap<string, V1Secret>;
  /** The Secrets read whole of each namespace, sorted by name. */
  readonly secretsIn: ReadonlyMap<string, readonly V1Secret[]>;
}

/** What differs from the epoch just before: only the Services, EndpointSlices and Backends of these keys. */
export interface DependencyChange {
  /** The epoch this one follows. */
  readonly from: number;
  /**
   * `<namespace>/<name>` of every Service and Backend that is not the object it was in `from`,
   * and of every Service whose EndpointSlices say other ports (slicePortsKey): what route rules
   * read. A Service whose endpoints alone changed is not among them.
   */
  readonly keys: ReadonlySet<string>;
  /** `<namespace>/<service>` of every Service whose EndpointSlices are not the objects they were in `from`. */
  readonly endpoints: ReadonlySet<string>;
  /**
   * Whether what was checked in epoch `epoch` (this one or an earlier) and reads, among the
   * dependency lists, only what `keys` names still holds: every change since was told by key
   * (this one included), and none named one of `keys`. A translation may skip the routes
   * (translate/routes-part.ts), so what was checked several epochs ago is still kept this way.
   */
  holdsSince(epoch: number, keys: Iterable<string>): boolean;
}

export interface Dependencies {
  readonly epoch: number;
  /** null: a list other than Services, EndpointSlices and Backends changed, or there was no epoch before. */
  readonly change: DependencyChange | null;
  readonly indexes: DependencyIndexes;
}

type ListName = 'services' | 'endpointSlices' | 'backends' | 'referenceGrants' | 'backendTLSPolicies' | 'secrets' | 'configMaps';
type Lists = Readonly<Record<ListName, readonly unknown[]>>;

const LIST_NAMES: readonly ListName[] = ['services', 'endpointSlices', 'backends', 'referenceGrants', 'backendTLSPolicies', 'secrets', 'configMaps'];
/** The lists whose changes are told by key (DependencyChange). */
const KEYED: ReadonlySet<ListName> = new Set<ListName>(['services', 'endpointSlices', 'backends']);

// The last translation's lists (its own copies: a caller may reuse and change an array between
// calls) and what was made of them. Nothing mutates an index once built.
let last: { readonly lists: Lists; readonly made: Dependencies } | null = null;
let epochs = 0;
// Since which epoch every change was told by key, and the epoch of each key's last change since
// then (DependencyChange.holdsSince). A change not told by key clears them; so does a history
// longer than MAX_KEY_HISTORY keys (then it counts as not told by key: everything is checked
// again once, as after a ReferenceGrant change).
let keyedSince = 0;
const keyChangedAt = new Map<string, number>();
const MAX_KEY_HISTORY = 10_000;

/** The indexes of these inputs' dependency lists, their epoch and, where it can tell, what changed. */
export function dependenciesOf(resources: Resources): Dependencies {
  const lists: Lists = {
    services: resources.services,
    endpointSlices: resources.endpointSlices,
    backends: resources.backends ?? [],
    referenceGrants: resources.referenceGrants,
    backendTLSPolicies: resources.backendTLSPolicies,
    secrets: resources.secrets,
    configMaps: resources.configMaps,
  };
  const changed = new Set(LIST_NAMES.filter((n) => !last || !sameObjects(lists[n], last.lists[n])));
  if (last && !changed.size) return last.made;
  const before = last?.made.indexes;
  const indexes = indexesOf(resources, changed, before);
  const epoch = ++epochs;
  const keyed = last && before && [...changed].every((n) => KEYED.has(n)) ? changedKeys(before, indexes) : null;
  if (keyed === null || keyChangedAt.size + keyed.keys.size > MAX_KEY_HISTORY) {
    keyedSince = epoch;
    keyChangedAt.clear();
  } else for (const key of keyed.keys) keyChangedAt.set(key, epoch);
  const change = keyed && keyedSince < epoch ? { from: last!.made.epoch, ...keyed, holdsSince } : null;
  const copies = Object.fromEntries(LIST_NAMES.map((n) => [n, changed.has(n) ? [...lists[n]] : last!.lists[n]])) as unknown as Lists;
  last = { lists: copies, made: { epoch, change, indexes } };
  return last.made;
}

function holdsSince(epoch: number, keys: Iterable<string>): boolean {
  if (epoch < keyedSince) return false;
  for (const key of keys) if ((keyChangedAt.get(key) ?? 0) > epoch) return false;
  return true;
}

/** The indexes, each made from its lists when one of them is in `changed`, else `before`'s. */
function indexesOf(resources: Resources, changed: ReadonlySet<ListName>, before: DependencyIndexes | undefined): DependencyIndexes {
  const again = (...names: ListName[]): boolean => !before || names.some((n) => changed.has(n));
  const configMaps = again('configMaps') ? byNamespacedName(resources.configMaps) : before!.configMaps;
  const secrets = again('secrets') ? byNamespacedName(resources.secrets) : before!.secrets;
  return {
    services: again('services') ? byNamespacedName(resources.services) : before!.services,
    endpointSlices: again('endpointSlices') ? slicesByService(resources.endpointSlices) : before!.endpointSlices,
    backends: again('backends') ? new Map(byKey(resources.backends ?? []).map((b) => [keyOf(b.metadata), b])) : before!.backends,
    grants: again('referenceGrants') ? new ReferenceGrants(resources.referenceGrants) : before!.grants,
    backendTls: again('backendTLSPolicies', 'configMaps') ? indexBackendTls(resources.backendTLSPolicies, (namespace, name) => configMaps.get(`${namespace}/${name}`)) : before!.backendTls,
    configMaps,
    secrets,
    secretsIn: again('secrets') ? byNamespace(secrets) : before!.secretsIn,
  };
}

function byNamespacedName<T extends { metadata?: { name?: string; namespace?: string } }>(list: readonly T[]): Map<string, T> {
  const out = new Map<string, T>();
  for (const o of list) if (o.metadata?.name && o.metadata.namespace) out.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
  return out;
}

function slicesByService(list: readonly V1EndpointSlice[]): Map<string, V1EndpointSlice[]> {
  const out = new Map<string, V1EndpointSlice[]>();
  for (const slice of list) {
    const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    const ns = slice.metadata?.namespace;
    if (!service || !ns) continue;
    const key = `${ns}/${service}`;
    const slices = out.get(key);
    if (slices) slices.push(slice);
    else out.set(key, [slice]);
  }
  for (const slices of out.values()) slices.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  return out;
}

function byNamespace(secrets: ReadonlyMap<string, V1Secret>): Map<string, V1Secret[]> {
  const out = new Map<string, V1Secret[]>();
  for (const [key, s] of [...secrets].sort(([a], [b]) => compareStrings(a, b))) {
    const ns = key.slice(0, key.indexOf('/'));
    const list = out.get(ns);
    if (list) list.push(s);
    else out.set(ns, [s]);
  }
  return out;
}

/** The keys whose Service, Backend or EndpointSlices differ between the two indexes (DependencyChange). */
function changedKeys(before: DependencyIndexes, now: DependencyIndexes): Pick<DependencyChange, 'keys' | 'endpoints'> {
  const keys = new Set<string>();
  const endpoints = new Set<string>();
  addDiffering(before.services, now.services, (a, b) => a === b, keys);
  addDiffering(before.backends, now.backends, (a, b) => a === b, keys);
  addDiffering(before.endpointSlices, now.endpointSlices, sameObjects, endpoints);
  for (const key of endpoints) if (slicePortsKey(before.endpointSlices.get(key) ?? NO_SLICES) !== slicePortsKey(now.endpointSlices.get(key) ?? NO_SLICES)) keys.add(key);
  return { keys, endpoints };
}

const NO_SLICES: readonly V1EndpointSlice[] = [];

function addDiffering<V>(before: ReadonlyMap<string, V>, now: ReadonlyMap<string, V>, same: (a: V, b: V) => boolean, into: Set<string>): void {
  if (before === now) return;
  for (const [key, v] of now) {
    const was = before.get(key);
    if (was === undefined || !same(was, v)) into.add(key);
  }
  for (const key of before.keys()) if (!now.has(key)) into.add(key);
}
