// A cors policy or an HTTPRoute CORS filter to the CorsIR the proxy runs, and what their
// schemas' CEL rules say, again for files and for objects the API server did not check.
import { compile } from '../ajv.js';
import { checkUnique, joinPath, show, type Problem } from '../validation-error.js';
import { CorsFilterConfig, DEFAULT_CORS_MAX_AGE, WILDCARD_WITH_CREDENTIALS, type CorsConfig, type CorsIR } from './cors.js';
import { parsePattern } from './origin.js';

export type { CorsIR };

export function toCorsIR(c: CorsConfig | CorsFilterConfig): CorsIR {
  return {
    allowOrigins: (c.allowOrigins ?? []).map((o) => o.toLowerCase()),
    allowMethods: [...(c.allowMethods ?? [])],
    allowHeaders: (c.allowHeaders ?? []).map((h) => h.toLowerCase()),
    exposeHeaders: (c.exposeHeaders ?? []).map((h) => h.toLowerCase()),
    allowCredentials: c.allowCredentials ?? false,
    maxAge: c.maxAge ?? DEFAULT_CORS_MAX_AGE,
  };
}

/**
 * The rules beyond the schema's types and patterns: "*" alone, each entry once (the lists are
 * sets), ports within 1-65535; for the policy kind, no "*" origin with credentials.
 */
export function checkCors(c: CorsConfig | CorsFilterConfig, path: string, kind: 'policy' | 'filter', out: Problem[]): void {
  const lists = { allowOrigins: c.allowOrigins, allowMethods: c.allowMethods, allowHeaders: c.allowHeaders } as const;
  for (const [field, list] of Object.entries(lists)) {
    if (list && list.length > 1 && list.includes('*')) out.push({ path: joinPath(path, field), message: `${field} cannot contain '*' alongside other entries; "*" alone means any` });
  }
  const lower = (s: string) => s.toLowerCase();
  for (const field of ['allowOrigins', 'allowMethods', 'allowHeaders', 'exposeHeaders'] as const) {
    const list: readonly string[] | undefined = c[field];
    if (list) checkUnique(list, field === 'allowMethods' ? String : lower, (i) => joinPath(joinPath(path, field), i), field === 'allowMethods' ? 'method' : field === 'allowOrigins' ? 'origin' : 'header', out);
  }
  c.allowOrigins?.forEach((o, i) => {
    if (o !== '*' && !parsePattern(o)) out.push({ path: joinPath(joinPath(path, 'allowOrigins'), i), message: `got ${show(o)}; the port must be 1 to 65535` });
  });
  if (kind === 'policy' && c.allowCredentials === true && c.allowOrigins?.includes('*')) out.push({ path: joinPath(path, 'allowCredentials'), message: WILDCARD_WITH_CREDENTIALS });
}

const validateFilter = compile(CorsFilterConfig);

/**
 * An HTTPRoute CORS filter's `cors` as the controller decoded it (shapes only): the schema and
 * the rules; the problems name fields under `path`.
 */
export function checkCorsFilter(value: unknown, path: string, out: Problem[]): value is CorsFilterConfig {
  if (value === undefined) {
    out.push({ path, message: 'required when type is CORS' });
    return false;
  }
  const r = validateFilter(value);
  if (!r.ok) {
    for (const p of r.problems) out.push({ path: p.path ? `${path}.${p.path}` : path, message: p.message });
    return false;
  }
  const before = out.length;
  checkCors(r.value, path, 'filter', out);
  return out.length === before;
}
