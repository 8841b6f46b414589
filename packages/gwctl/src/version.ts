// gwctl's version: packages/gwctl/package.json's, the one place it is written. Run from the
// repository, dist/ sits beside package.json and reads it; the single-file build
// (scripts/gwctl.mjs) has no package.json beside it, so esbuild writes the version into the
// bundle in place of __GWCTL_VERSION__.
import { readFileSync } from 'node:fs';

declare const __GWCTL_VERSION__: string | undefined;

export function version(): string {
  if (typeof __GWCTL_VERSION__ === 'string') return __GWCTL_VERSION__;
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
