// The comparison every memo of the translator makes: informer caches hand out the same object
// until it changes, so lists of the same objects in the same order were made from the same inputs.

/** Whether two lists hold the same objects in the same order. */
export function sameObjects(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** How many objects two lists share at their start (`head`) and, after it, at their end (`tail`), compared by object. */
export function commonEnds(a: readonly unknown[], b: readonly unknown[]): { readonly head: number; readonly tail: number } {
  const most = Math.min(a.length, b.length);
  let head = 0;
  while (head < most && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < most - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return { head, tail };
}
