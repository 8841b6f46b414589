// What World.resources() hands translation of each kind cached whole: the informer's objects
// that can be read. Translation compares the lists it is given with the last ones by object, so
// a kind whose cache did not change hands out the same array (no change seen, at no cost), and a
// kind with a few objects changed, none left out before, is checked in the stretch of the list
// that differs (the cache replaces an object where it was and adds one at the end of its
// namespace's), not object by object: each route added among thousands looked all of them up.

import { commonEnds } from '@tollgate/api';

/** A kind's list as last handed out. */
interface Handed<T> {
  /** The informer's change count then: while it stays, so does the list. */
  readonly count: number;
  /** The informer's list then (the cache hands out a new array each time). */
  readonly listed: readonly T[];
  /** What was handed out: `listed` without the objects that cannot be read. */
  readonly out: readonly T[];
  /** The ids of the objects left out. */
  readonly skipped: readonly string[];
}

export class ReadableLists<T> {
  readonly #handed = new Map<string, Handed<T>>();

  /**
   * The objects of `list()` that `check` finds readable (null; else the object's id, which goes
   * into `seen`), in their order. `count` moves whenever the cache behind `list()` changes.
   */
  list(kind: string, count: number, list: () => readonly T[], check: (o: T) => string | null, seen: Set<string>): readonly T[] {
    const was = this.#handed.get(kind);
    if (was?.count === count) {
      for (const id of was.skipped) seen.add(id);
      return was.out;
    }
    const listed = list();
    let handed: Handed<T> | undefined;
    if (was?.skipped.length === 0) {
      const { head, tail } = commonEnds(was.listed, listed);
      let readable = true;
      for (let i = head; readable && i < listed.length - tail; i++) readable = check(listed[i]!) === null;
      if (readable) handed = { count, listed, out: listed, skipped: [] };
    }
    if (!handed) {
      const skipped: string[] = [];
      handed = { count, listed, out: readableOf(listed, check, (id) => skipped.push(id)), skipped };
    }
    for (const id of handed.skipped) seen.add(id);
    this.#handed.set(kind, handed);
    return handed.out;
  }
}

/** The objects `check` finds readable (null), in their order; `skipped` is told the id of each other one. */
export function readableOf<T>(objects: readonly T[], check: (o: T) => string | null, skipped: (id: string) => void): T[] {
  return objects.filter((o) => {
    const id = check(o);
    if (id !== null) skipped(id);
    return id === null;
  });
}
