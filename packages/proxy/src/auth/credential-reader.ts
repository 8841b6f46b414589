// Reading one credential from the places a policy names (the Authorization header's Bearer
// credential, a header, a query parameter, a cookie), and what to take out of the request so
// the backend never sees it. A credential must be in exactly one place, once: a request that
// carries two (in two places, or one header sent twice) is refused rather than one of them
// picked, since a check and the backend could otherwise read different ones. Headers are read
// from the raw list, because Node keeps only the first of repeated Authorization headers.
import type { CredentialLocationIR, TokenLocationIR } from '@tollgate/api';
import type { AuthRequest } from './types.js';

/** A place as a kind names it: jwt's header places may carry a prefix the value starts with. */
export type CredentialPlace = CredentialLocationIR | TokenLocationIR;

const prefixOf = (l: CredentialPlace): string | null => (l.type === 'Header' && 'prefix' in l ? l.prefix : null);

/** What to take out of the forwarded request (AuthPass fields). */
export interface CredentialStrip {
  readonly removeHeaders?: readonly string[];
  readonly removeQuery?: readonly string[];
  readonly setHeaders?: Readonly<Record<string, string>>;
}

export type CredentialRead =
  | { readonly found: 'none' }
  | { readonly found: 'one'; readonly value: string; readonly where: string; readonly strip: CredentialStrip }
  /** ambiguous: two credentials; malformed: a place holds something that is not one. `detail` never quotes a value. */
  | { readonly found: 'refused'; readonly reason: 'ambiguous' | 'malformed'; readonly detail: string };

interface Candidate {
  readonly value: string;
  readonly where: string;
  readonly strip: CredentialStrip;
}

/** How a place is named to a client and in docs. */
export function describeLocation(l: CredentialPlace): string {
  switch (l.type) {
    case 'Bearer':
      return 'Authorization: Bearer';
    case 'Header': {
      const prefix = prefixOf(l);
      return prefix ? `header ${l.name} after "${prefix}"` : `header ${l.name}`;
    }
    case 'Query':
      return `query parameter ${l.name}`;
    case 'Cookie':
      return `cookie ${l.name}`;
  }
}

/** Every value of each header in `names` (lower case), in the order received. */
export function headerValues(rawHeaders: readonly string[], names: ReadonlySet<string>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!names.has(name)) continue;
    const list = out.get(name);
    if (list) list.push(rawHeaders[i + 1]!);
    else out.set(name, [rawHeaders[i + 1]!]);
  }
  return out;
}

/** The header names a set of places reads. */
export function headerNames(locations: readonly CredentialPlace[]): ReadonlySet<string> {
  const names = new Set<string>();
  for (const l of locations) {
    if (l.type === 'Bearer') names.add('authorization');
    else if (l.type === 'Header') names.add(l.name);
    else if (l.type === 'Cookie') names.add('cookie');
  }
  return names;
}

const BEARER = /^bearer(?:[ \t]+(.*))?$/is;

export function readCredential(req: AuthRequest, locations: readonly CredentialPlace[], names: ReadonlySet<string>): CredentialRead {
  const headers = headerValues(req.rawHeaders, names);
  const found: Candidate[] = [];
  for (const l of locations) {
    const where = describeLocation(l);
    const r = l.type === 'Bearer' ? bearer(headers.get('authorization'), where) : l.type === 'Header' ? header(headers.get(l.name), l.name, where, prefixOf(l)) : l.type === 'Query' ? query(req.query, l.name, where) : cookie(headers.get('cookie'), l.name, where);
    if (r === null) continue;
    if ('found' in r) return r;
    found.push(r);
  }
  if (found.length > 1) return { found: 'refused', reason: 'ambiguous', detail: `credentials in two places (${found.map((c) => c.where).join(' and ')}); send one` };
  return found.length ? { found: 'one', ...found[0]! } : { found: 'none' };
}

type PlaceRead = Candidate | Extract<CredentialRead, { found: 'refused' }> | null;

const malformed = (detail: string): PlaceRead => ({ found: 'refused', reason: 'malformed', detail });
const twice = (what: string, n: number): PlaceRead => ({ found: 'refused', reason: 'ambiguous', detail: `${what} is sent ${n} times; send it once` });

function bearer(values: string[] | undefined, where: string): PlaceRead {
  if (!values) return null;
  if (values.length > 1) return twice('the Authorization header', values.length);
  const m = BEARER.exec(values[0]!);
  // Another scheme (Basic, ...) is another kind's credential, not this one.
  if (!m) return null;
  const token = (m[1] ?? '').trim();
  if (token === '') return malformed('the Authorization header says Bearer but carries no credential');
  if (/\s/.test(token)) return malformed('the Bearer credential has whitespace in it');
  return { value: token, where, strip: { removeHeaders: ['authorization'] } };
}

function header(values: string[] | undefined, name: string, where: string, prefix: string | null): PlaceRead {
  if (!values) return null;
  if (values.length > 1) return twice(`the ${name} header`, values.length);
  let value = values[0]!;
  if (prefix !== null) {
    // Compared without case; a prefix ending in a space takes any run of spaces. A value
    // without the prefix is not this place's credential.
    const word = prefix.trimEnd().toLowerCase();
    if (value.slice(0, word.length).toLowerCase() !== word) return null;
    const rest = value.slice(word.length);
    if (word.length !== prefix.length && rest !== '' && !/^[ \t]/.test(rest)) return null;
    value = rest.trim();
  }
  if (value === '') return malformed(prefix ? `the ${name} header has "${prefix.trimEnd()}" and no credential after it` : `the ${name} header is empty`);
  return { value, where, strip: { removeHeaders: [name] } };
}

/** A query name or value as clients encode it: percent escapes and "+" for space; null when it does not decode. */
function decodeQueryPart(raw: string): string | null {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

function query(text: string, name: string, where: string): PlaceRead {
  if (text === '') return null;
  const values: (string | null)[] = [];
  for (const pair of text.split('&')) {
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    if ((decodeQueryPart(rawName) ?? rawName) !== name) continue;
    values.push(eq < 0 ? '' : decodeQueryPart(pair.slice(eq + 1)));
  }
  if (values.length === 0) return null;
  if (values.length > 1) return twice(`the query parameter ${name}`, values.length);
  const v = values[0] as string | null;
  if (v === null) return malformed(`the query parameter ${name} has a malformed percent escape`);
  if (v === '') return malformed(`the query parameter ${name} is empty`);
  return { value: v, where, strip: { removeQuery: [name] } };
}

function cookie(values: string[] | undefined, name: string, where: string): PlaceRead {
  if (!values) return null;
  const kept: string[] = [];
  const mine: string[] = [];
  for (const header of values) {
    for (const part of header.split(';')) {
      const pair = part.trim();
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      if ((eq < 0 ? pair : pair.slice(0, eq).trim()) !== name) {
        kept.push(pair);
        continue;
      }
      const v = eq < 0 ? '' : pair.slice(eq + 1).trim();
      mine.push(v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v);
    }
  }
  if (mine.length === 0) return null;
  if (mine.length > 1) return twice(`the cookie ${name}`, mine.length);
  if (mine[0] === '') return malformed(`the cookie ${name} is empty`);
  // Only this cookie goes; the others reach the backend as they came.
  const strip: CredentialStrip = kept.length ? { setHeaders: { cookie: kept.join('; ') } } : { removeHeaders: ['cookie'] };
  return { value: mine[0]!, where, strip };
}
