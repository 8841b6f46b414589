// Where a JWT is read from a request (the Authorization Bearer credential, a header after an
// optional prefix, a cookie, a query parameter) and how it is taken out of the forwarded
// request. A place that names the token twice (a cookie or parameter repeated) is refused
// rather than guessed at: the proxy and the backend must never read different tokens.
import type { IncomingHttpHeaders } from 'node:http';
import type { TokenLocationIR } from '@tollgate/api';

/** What removes the token from the forwarded request. */
export interface TokenRemoval {
  readonly removeHeaders?: readonly string[];
  readonly setHeaders?: Readonly<Record<string, string>>;
  readonly removeQuery?: readonly string[];
}

export type TokenRead =
  | { readonly kind: 'none' }
  | { readonly kind: 'token'; readonly token: string; readonly removal: TokenRemoval }
  /** The place holds something that cannot be one token (repeated). */
  | { readonly kind: 'ambiguous'; readonly detail: string };

const NONE: TokenRead = { kind: 'none' };

export function readToken(loc: TokenLocationIR, headers: IncomingHttpHeaders, query: string): TokenRead {
  switch (loc.type) {
    case 'Bearer':
      return fromHeader(headers.authorization, 'authorization', 'bearer ');
    case 'Header':
      return fromHeader(headers[loc.name], loc.name, loc.prefix?.toLowerCase() ?? null);
    case 'Cookie':
      return fromCookie(headers.cookie, loc.name);
    case 'Query':
      return fromQuery(query, loc.name);
  }
}

function fromHeader(value: string | string[] | undefined, name: string, prefix: string | null): TokenRead {
  if (value === undefined) return NONE;
  // Node joins a repeated header with ", " (and keeps only the first Authorization), so a
  // string here is all the client sent under that name.
  const text = (Array.isArray(value) ? value.join(', ') : value).trim();
  let token = text;
  if (prefix !== null) {
    // Compared without case ("Bearer", "bearer"); a prefix ending in a space takes any run of them.
    const word = prefix.trimEnd();
    if (text.slice(0, word.length).toLowerCase() !== word) return NONE;
    token = text.slice(word.length);
    if (word !== prefix && !/^\s/.test(token)) return NONE;
    token = token.trimStart();
  }
  return token ? { kind: 'token', token, removal: { removeHeaders: [name] } } : NONE;
}

function fromCookie(header: string | undefined, name: string): TokenRead {
  if (header === undefined) return NONE;
  const rest: string[] = [];
  let token: string | null = null;
  let count = 0;
  for (const part of header.split(';')) {
    const pair = part.trim();
    if (!pair) continue;
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) {
      count++;
      const v = pair.slice(eq + 1).trim();
      token = v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v;
    } else rest.push(pair);
  }
  if (count === 0) return NONE;
  if (count > 1) return { kind: 'ambiguous', detail: `the cookie ${name} appears more than once` };
  if (!token) return NONE;
  const removal: TokenRemoval = rest.length ? { setHeaders: { cookie: rest.join('; ') } } : { removeHeaders: ['cookie'] };
  return { kind: 'token', token, removal };
}

function fromQuery(query: string, name: string): TokenRead {
  if (!query) return NONE;
  let token: string | null = null;
  let count = 0;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const raw = eq < 0 ? pair : pair.slice(0, eq);
    if (decode(raw) !== name) continue;
    count++;
    token = eq < 0 ? '' : decode(pair.slice(eq + 1));
  }
  if (count === 0) return NONE;
  if (count > 1) return { kind: 'ambiguous', detail: `the query parameter ${name} appears more than once` };
  return token ? { kind: 'token', token, removal: { removeQuery: [name] } } : NONE;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
