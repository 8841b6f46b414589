// The comparison every memo of the translator makes: informer caches hand out the same object
// until it changes, so lists of the same objects in the same order were made from the same inputs.

/** Whether two lists hold the same objects in the same order. */
export function sameObjects(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// (How far two lists agree from each end: one comparison for the whole project.)
export { commonEnds } from '@tollgate/api';
