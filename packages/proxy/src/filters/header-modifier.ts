// RequestHeaderModifier / ResponseHeaderModifier: set replaces, add appends to any value
// present (comma-joined, as HTTP allows), remove deletes; in that order.
import type { HeaderModifierIR, HeaderValueIR } from '@tollgate/api';

export type HeaderMap = Record<string, string | string[] | undefined>;

function valueOf(h: HeaderValueIR): string {
  return typeof h.value === 'string' ? h.value : h.value.reveal();
}

export function applyHeaderModifier(headers: HeaderMap, mod: HeaderModifierIR): void {
  for (const h of mod.set) headers[h.name] = valueOf(h);
  for (const h of mod.add) {
    const cur = headers[h.name];
    const v = valueOf(h);
    if (cur === undefined) headers[h.name] = v;
    else if (Array.isArray(cur)) headers[h.name] = [...cur, v];
    else headers[h.name] = `${cur},${v}`;
  }
  for (const name of mod.remove) delete headers[name];
}
