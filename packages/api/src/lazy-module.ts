// Libraries loaded on first use, for what most configs never need (CEL, RE2): each is
// megabytes of a process's memory. Their CommonJS builds are required synchronously, so the
// validators and compilers that use them stay synchronous; every use in the project goes
// through one accessor per library, so one copy of each is ever loaded.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** An accessor that loads `specifier` (a dependency of this package) on its first call. */
export function lazyModule<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}
