// Object keys and the one ordering every list is sorted by, so that output never depends on
// the order the informers delivered the objects in.
import { GATEWAY_GROUP, type ListenerSet, type ObjectMeta } from '../types/gateway-api.js';

export function keyOf(meta: { readonly namespace?: string; readonly name: string }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function byKey<T extends { readonly metadata: { readonly namespace?: string; readonly name: string } }>(items: readonly T[]): T[] {
  // Each key built once, not twice per comparison (thousands of routes sort on every reconcile).
  return items
    .map((item) => ({ item, key: keyOf(item.metadata) }))
    .sort((a, b) => compareStrings(a.key, b.key))
    .map((x) => x.item);
}

// Creation times by metadata object: an object's text is parsed once, not in every sort of every
// translation (objects are not changed in place: an edit is a new object).
const creationTimes = new WeakMap<ObjectMeta, number>();

/** Milliseconds since the epoch, or +Infinity when unknown (sorts last). */
export function createdAt(meta: ObjectMeta): number {
  let ms = creationTimes.get(meta);
  if (ms === undefined) creationTimes.set(meta, (ms = parseCreatedAt(meta)));
  return ms;
}

function parseCreatedAt(meta: ObjectMeta): number {
  const t = meta.creationTimestamp;
  if (t === undefined) return Number.POSITIVE_INFINITY;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
}

/** Gateway API tie-break between objects: oldest first, then namespace/name alphabetically. */
export function compareAge(a: ObjectMeta, b: ObjectMeta): number {
  return createdAt(a) - createdAt(b) || compareStrings(keyOf(a), keyOf(b));
}

export function generationOf(meta: ObjectMeta): number {
  return meta.generation ?? 0;
}

/** `<namespace>/<name>` of the Gateway a ListenerSet names; '' when its parentRef is not a Gateway. */
export function listenerSetParentKey(ls: ListenerSet): string {
  const ref = ls.spec.parentRef;
  if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind ?? 'Gateway') !== 'Gateway') return '';
  return `${ref.namespace ?? ls.metadata.namespace ?? ''}/${ref.name}`;
}
