// The two ways work kept in proportion to a change finds its place in a list. Two lists that
// mostly share their objects (a snapshot's route list and the one it replaces, an informer's
// list and the last one): how far they agree from each end. A sorted list: where an entry is or
// goes, by a binary search.

/** How many objects two lists share at their start (`head`) and, after it, at their end (`tail`), compared by object. */
export function commonEnds(a: readonly unknown[], b: readonly unknown[]): { readonly head: number; readonly tail: number } {
  const most = Math.min(a.length, b.length);
  let head = 0;
  while (head < most && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < most - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return { head, tail };
}

/** The first index of `[0, length)` at which `before(i)` is false, for a `before` that is true up to some index and false from it on (a binary search). */
export function firstIndex(length: number, before: (i: number) => boolean): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
