// Path changes of URLRewrite and RequestRedirect. ReplacePrefixMatch swaps the part of the
// path that the route's PathPrefix matched, on element boundaries: with prefix "/foo",
// "/foo/bar" becomes "<replacement>/bar", and a replacement of "/" never yields "//".
import type { PathModifierIR, PathMatchIR } from '@tollgate/api';

function trimSlash(p: string): string {
  return p.replace(/\/+$/, '');
}

export function rewritePath(path: string, mod: PathModifierIR, matched: PathMatchIR): string {
  if (mod.type === 'ReplaceFullPath') return mod.value;
  // Validation allows ReplacePrefixMatch only on PathPrefix matches.
  const prefix = trimSlash(matched.value);
  const rest = path.slice(prefix.length);
  const out = trimSlash(mod.value) + rest;
  return out.startsWith('/') ? out : `/${out}`;
}
