// A snapshot carries its credentials (provider keys, API keys, header values set by filters) as
// Secret objects, whose value is a private field: the structured clone that hands a snapshot to
// a worker thread copies none of it. So the main thread lists where each Secret is, with its
// value, and the worker puts a Secret back at each place of its copy. The list travels in the
// same message as the snapshot, from one thread of the process to another, never further.
import { Secret } from '@tollgate/api';

/** Each Secret of a snapshot: the keys that lead to it, and its value. */
export type SecretPlaces = readonly (readonly [readonly (string | number)[], string])[];

/**
 * Where the Secrets of `root` are. An object reached twice is read once: the structured clone
 * keeps it one object, so putting its Secrets back through one path mends every alias.
 */
export function secretPlaces(root: unknown): SecretPlaces {
  const out: [(string | number)[], string][] = [];
  const seen = new Set<object>();
  const path: (string | number)[] = [];
  const walk = (value: unknown): void => {
    if (value instanceof Secret) {
      out.push([[...path], value.reveal()]);
      return;
    }
    if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value) || seen.has(value)) return;
    seen.add(value);
    // Keys walked in place: a hand-over lists thousands of route numbers, each a child here.
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visit(i, value[i]);
    } else {
      for (const key of Object.keys(value)) visit(key, (value as Record<string, unknown>)[key]);
    }
  };
  const visit = (key: string | number, child: unknown): void => {
    if (typeof child !== 'object' || child === null) return;
    path.push(key);
    walk(child);
    path.pop();
  };
  walk(root);
  return out;
}

/** Puts a Secret back at each place of `root` (the worker's copy of the snapshot). */
export function restoreSecrets(root: unknown, places: SecretPlaces): void {
  for (const [path, value] of places) {
    let at = root as Record<string | number, unknown>;
    for (let i = 0; i < path.length - 1; i++) at = at[path[i]!] as Record<string | number, unknown>;
    at[path[path.length - 1]!] = new Secret(value);
  }
}
