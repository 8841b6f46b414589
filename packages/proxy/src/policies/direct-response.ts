// directResponse compiled: the status, the headers and the body bytes, made once per IR object
// and sent as they are to every request of the route.
import type { DirectResponseIR } from '@tollgate/api';

export interface CompiledDirectResponse {
  readonly ir: DirectResponseIR;
  readonly status: number;
  /** Lower-case names; content-type and content-length included. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

const cache = new WeakMap<DirectResponseIR, CompiledDirectResponse>();

export function compileDirectResponse(ir: DirectResponseIR): CompiledDirectResponse {
  const hit = cache.get(ir);
  if (hit) return hit;
  const body = Buffer.from(ir.body?.text ?? '', 'utf8');
  const headers: Record<string, string> = {};
  if (ir.body) headers['content-type'] = ir.body.contentType;
  // The configured headers may set their own content-type.
  for (const h of ir.headers) headers[h.name] = typeof h.value === 'string' ? h.value : h.value.reveal();
  // A 204 or 304 has no body and no length (RFC 9110 §8.6).
  if (ir.status !== 204 && ir.status !== 304) headers['content-length'] = String(body.length);
  const compiled = { ir, status: ir.status, headers, body };
  cache.set(ir, compiled);
  return compiled;
}
