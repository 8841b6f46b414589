// A csrf policy to the CsrfIR the proxy runs, and the schema's rules again for files.
import { checkUnique, joinPath, show, type Problem } from '../validation-error.js';
import type { CsrfConfig, CsrfIR } from './csrf.js';
import { parsePattern } from './origin.js';

export type { CsrfIR };

export function toCsrfIR(c: CsrfConfig): CsrfIR {
  return { additionalOrigins: (c.additionalOrigins ?? []).map((o) => o.toLowerCase()) };
}

export function checkCsrf(c: CsrfConfig, path: string, out: Problem[]): void {
  const list = c.additionalOrigins;
  if (!list) return;
  const at = joinPath(path, 'additionalOrigins');
  list.forEach((o, i) => {
    if (o === '*') out.push({ path: joinPath(at, i), message: 'cannot be "*": that would allow every site, which is no protection; list the origins, or remove the csrf policy' });
    else if (!parsePattern(o)) out.push({ path: joinPath(at, i), message: `got ${show(o)}; the port must be 1 to 65535` });
  });
  checkUnique(list, (o) => o.toLowerCase(), (i) => joinPath(at, i), 'origin', out);
}
