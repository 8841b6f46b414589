// Two lists of objects that mostly share their objects (a snapshot's route list and the one it
// replaces, an informer's list and the last one): how far they agree from each end. Everything
// that keeps work in proportion to a change compares lists this way.

/** How many objects two lists share at their start (`head`) and, after it, at their end (`tail`), compared by object. */
export function commonEnds(a: readonly unknown[], b: readonly unknown[]): { readonly head: number; readonly tail: number } {
  const most = Math.min(a.length, b.length);
  let head = 0;
  while (head < most && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < most - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return { head, tail };
}
