// RequestRedirect: the Location of the redirect, with the Gateway API's port rules. Without
// a port in the filter, a changed scheme takes its well-known port and an unchanged scheme
// keeps the listener's port; a well-known port is left out of the Location.
import type { FilterIR, PathMatchIR } from '@tollgate/api';
import { rewritePath } from './path.js';

type Redirect = Extract<FilterIR, { type: 'RequestRedirect' }>;

const WELL_KNOWN: Record<string, number> = { http: 80, https: 443 };

export interface RedirectInput {
  readonly scheme: 'http' | 'https';
  readonly host: string;
  readonly listenerPort: number;
  readonly path: string;
  readonly query: string;
  readonly matched: PathMatchIR;
}

export function redirectLocation(f: Redirect, req: RedirectInput): string {
  const scheme = f.scheme ?? req.scheme;
  const host = f.hostname ?? req.host;
  const port = f.port ?? (f.scheme ? WELL_KNOWN[f.scheme]! : req.listenerPort);
  const path = f.path ? rewritePath(req.path, f.path, req.matched) : req.path;
  const portPart = port === WELL_KNOWN[scheme] ? '' : `:${port}`;
  return `${scheme}://${host}${portPart}${path}${req.query ? `?${req.query}` : ''}`;
}
