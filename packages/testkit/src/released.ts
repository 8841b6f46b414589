// Whether objects a test let go of are collected: the check of a leak. V8's `gc` is reached
// through a new context once --expose-gc is set at run time (no node flag for the test runner).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Runs full collections until every target of `refs` is gone, at most five, and says which are
 * still alive (their indexes). A WeakRef holds its target until the current job ends, so each
 * collection comes after a turn of the event loop; a collection does not always find every
 * unreachable object at once (seen on a loaded machine), so it is repeated: what the code under
 * test still holds survives them all.
 */
export async function collectUntilReleased(refs: readonly WeakRef<object>[]): Promise<number[]> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const alive = () => refs.flatMap((w, i) => (w.deref() === undefined ? [] : [i]));
  for (let i = 0; i < 5 && (i === 0 || alive().length > 0); i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return alive();
}
