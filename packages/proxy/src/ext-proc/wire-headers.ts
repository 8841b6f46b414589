// Headers as the processor gets them: Envoy's HeaderMap, pseudo-headers first (:method, :path,
// :authority, :scheme of a request; :status of a response), each value as raw_value bytes; a
// header with several values is one entry per value, as Envoy sends them.
import type { WireHeader } from './proto.js';

type Values = Readonly<Record<string, string | string[] | number | undefined>>;

export function wireHeaders(pseudo: readonly (readonly [string, string])[], headers: Values): WireHeader[] {
  const out: WireHeader[] = pseudo.map(([key, value]) => ({ key, raw_value: Buffer.from(value, 'latin1') }));
  for (const [key, v] of Object.entries(headers)) {
    if (v === undefined || key.startsWith(':')) continue;
    for (const value of Array.isArray(v) ? v : [String(v)]) out.push({ key, raw_value: Buffer.from(value, 'latin1') });
  }
  return out;
}
