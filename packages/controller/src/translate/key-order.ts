// The objects of one kind by `<namespace>/<name>`, in key order, kept from one translation to
// the next. The informer caches hand out the same list with a few objects replaced, added or
// removed, so the new list is compared with the last one object by object (a pointer compare
// each) and only the stretch that differs is keyed and placed: the map is the last one with
// those keys set or taken out (./patched-map.ts), and no key of an unchanged object is built,
// hashed or sorted again. Any other change (many objects, keys used twice) is indexed from
// scratch, as it always was.
import { compareStrings, keyOf } from './keys.js';
import { patchedMap } from './patched-map.js';
import { commonEnds } from './same-objects.js';

type Keyed = { readonly metadata: { readonly namespace?: string; readonly name: string } };

interface Indexed<T, V> {
  /** A copy of the list indexed (a caller may reuse and change its array between calls). */
  readonly items: readonly T[];
  readonly value: ((item: T) => V) | undefined;
  readonly out: ReadonlyMap<string, V>;
}

/** The most objects that differ from the last list for it to be patched rather than indexed again. */
const MAX_PATCH = 64;

// By kind; the output is a function of the list's objects and `value` (the same function for
// a kind in every call: it is part of the key all the same).
const last = new Map<string, Indexed<unknown, unknown>>();

/** `items` by `<namespace>/<name>`, in key order (the order byKey gives: the last of equal keys kept). A map never changed once returned. */
export function inKeyOrder<T extends Keyed, V = T>(kind: string, items: readonly T[], value?: (item: T) => V): ReadonlyMap<string, V> {
  const before = last.get(kind) as Indexed<T, V> | undefined;
  const next = (before && before.value === value && patched(before, items)) || indexed(items, value);
  last.set(kind, next as Indexed<unknown, unknown>);
  return next.out;
}

function indexed<T extends Keyed, V>(items: readonly T[], value: ((item: T) => V) | undefined): Indexed<T, V> {
  const byName = new Map<string, T>();
  for (const item of items) byName.set(keyOf(item.metadata), item);
  const keys = [...byName.keys()].sort(compareStrings);
  const out = new Map<string, V>();
  for (const key of keys) {
    const item = byName.get(key)!;
    out.set(key, value ? value(item) : (item as unknown as V));
  }
  return { items: items.slice(), value, out };
}

// For a map made by patching the one before: that map and the keys whose value may differ
// between the two (added, removed or replaced; an object moved in the list is named too), for a
// reader that keeps what it made from the map before.
// The map before is named by a number, not held: a chain of maps each holding the one before
// would keep every object ever listed.
const patchedFrom = new WeakMap<ReadonlyMap<string, unknown>, { readonly from: number; readonly keys: readonly string[] }>();
const serials = new WeakMap<ReadonlyMap<string, unknown>, number>();
let nextSerial = 1;

function serialOf(map: ReadonlyMap<string, unknown>): number {
  let n = serials.get(map);
  if (n === undefined) serials.set(map, (n = nextSerial++));
  return n;
}

/**
 * Keys among which are all those whose value differs between `before` and `now`, two maps
 * inKeyOrder returned for a kind, when `now` was made from `before` (by the same call or a patch
 * of it); null when that is not known (the reader looks at every key).
 */
export function changedKeys(before: ReadonlyMap<string, unknown>, now: ReadonlyMap<string, unknown>): readonly string[] | null {
  if (before === now) return [];
  const p = patchedFrom.get(now);
  return p !== undefined && p.from === serials.get(before) ? p.keys : null;
}

/**
 * Records that `now`, a map in key order, was made from `before` and that only `keys` may hold
 * other values (or be added or removed): changedKeys(before, now) answers them. For maps made
 * from those inKeyOrder returns (the routes' status by key), whose readers keep what they made
 * from the map before.
 */
export function recordPatch(before: ReadonlyMap<string, unknown>, now: ReadonlyMap<string, unknown>, keys: readonly string[]): void {
  patchedFrom.set(now, { from: serialOf(before), keys });
}

function madeFrom<T, V>(before: Indexed<T, V>, next: Indexed<T, V>, keys: readonly string[]): Indexed<T, V> {
  recordPatch(before.out, next.out, keys);
  return next;
}

/** `before` with the objects that differ from `items` taken out and put in; null when that is not the simple case. */
function patched<T extends Keyed, V>(before: Indexed<T, V>, items: readonly T[]): Indexed<T, V> | null {
  const old = before.items;
  // A key used twice in the last list: which object won depends on the whole list.
  if (old.length !== before.out.size) return null;
  const { head: start, tail: end } = commonEnds(old, items);
  if (start === old.length && start === items.length) return before;
  const gone = old.slice(start, old.length - end);
  const came = items.slice(start, items.length - end);
  if (gone.length + came.length > MAX_PATCH) return null;
  const goneKeys = new Set(gone.map((o) => keyOf(o.metadata)));
  const cameByKey = new Map(came.map((o) => [keyOf(o.metadata), o] as const));
  // A key twice among the new objects, or a new object with the key of one that stays.
  if (cameByKey.size !== came.length) return null;
  for (const key of cameByKey.keys()) if (before.out.has(key) && !goneKeys.has(key)) return null;
  const valueOf = (item: T): V => (before.value ? before.value(item) : (item as unknown as V));
  const removed = [...goneKeys].filter((k) => !cameByKey.has(k));
  // (Every key that left was in the last map: its object was in the last list.)
  if (!removed.every((k) => before.out.has(k))) return null;
  // An edit keeps its key's place, an add is placed by its key: the map before, patched.
  const out = patchedMap(
    before.out,
    [...cameByKey].map(([key, item]) => [key, valueOf(item)] as const),
    removed,
  );
  return madeFrom(before, { items: items.slice(), value: before.value, out }, [...new Set([...goneKeys, ...cameByKey.keys()])]);
}
