// Libraries loaded on first use, for what most configs never need (CEL, RE2, gRPC...): each is
// megabytes of a process's memory. Their CommonJS builds are required synchronously, so the
// validators and compilers that use them stay synchronous; every use in the project goes
// through one accessor per library, so one copy of each is ever loaded.
import { createRequire } from 'node:module';

const ownRequire = createRequire(import.meta.url);

/**
 * An accessor that loads `specifier` on its first call: a dependency of this package, or of the
 * package whose module URL is `from` (another package's dependencies resolve from there).
 */
export function lazyModule<T>(specifier: string, from?: string): () => T {
  const require = from === undefined ? ownRequire : createRequire(from);
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}
