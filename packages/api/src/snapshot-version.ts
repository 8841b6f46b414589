// The version of a snapshot: a hash of everything but the version itself (secrets included,
// so a rotated credential is a new version). Equal content, equal version, so a controller
// can skip pushing what a proxy already has.
//
// The hashed text is the JSON of a skeleton in which each route is the digest of its wire
// text. Routes are immutable objects, so a route's digest is kept by identity, and so is the
// text of each listener's list of digests (by list object). A list that is not the same
// object as before is written from the list it replaces (`previous` of snapshotVersion): the
// digests of the routes both share at its start and at its end are copied as text, and only
// those in between are looked up, so a change to one route of thousands writes one digest.
// What is hashed is the same text however it was assembled.
import { createHash, type Hash } from 'node:crypto';
import { entryText, policyText, reveal, routeText } from './route-text.js';
import type { ListenerTlsIR, ProxySnapshot, RouteIR, ServiceEndpointsIR } from './snapshot.js';

/**
 * The version of `snapshot`. `previous`, when given, is a snapshot the same source sent
 * before: its listeners' route lists (by name) are where an unchanged stretch of routes is
 * copied from, and the hash is taken up from where the text starts to differ from its text
 * (see Trail). It changes how much work the hash takes, never the version.
 */
export function snapshotVersion(snapshot: Omit<ProxySnapshot, 'version'> | ProxySnapshot, previous?: ProxySnapshot): string {
  const before = previous && previousRoutes(previous);
  // The text of JSON.stringify(skeleton) for the skeleton { source, limits?, binds: [{ port,
  // address, listeners: [{ name, protocol, hostname, tls?, policy, routes: [digest...] }] }],
  // tlsBinds?, endpoints? }, written part by part so the routes' part of each listener can be
  // kept: the pieces between the route lists as text, each list as itself (its text is its
  // digest list, digestList()).
  // Only when set: the versions of snapshots with the default bounds stay what they were.
  const head = { source: snapshot.source, ...(snapshot.limits ? { limits: snapshot.limits } : {}) };
  const pieces: Piece[] = [];
  let text = `${open(head)}"binds":[`;
  snapshot.binds.forEach((b, bi) => {
    text += `${bi ? ',' : ''}${open({ port: b.port, address: b.address })}"listeners":[`;
    b.listeners.forEach((l, li) => {
      // The policy with its secrets in clear (a Secret's JSON is "[redacted]"): a rotated
      // password hash, API key or client secret of a Gateway's policy is a new version. Its
      // text is kept by policy object, as a route's is (a Gateway's API keys can be thousands).
      const fields = withRawField({ name: l.name, protocol: l.protocol, hostname: l.hostname, ...(l.protocol === 'HTTPS' ? { tls: tlsDigest(l.tls) } : {}) }, 'policy', policyText(l.policy));
      pieces.push(`${text}${li ? ',' : ''}${fields.slice(0, -1)},"routes":[`, { routes: l.routes, before: before?.get(l.name) });
      text = ']}';
    });
    text += ']}';
  });
  // Only when set: the versions of snapshots without TLS listeners stay what they were.
  const tlsBinds = snapshot.tlsBinds
    ? {
        tlsBinds: snapshot.tlsBinds.map((b) => ({
          ...b,
          listeners: b.listeners.map((l) => ({ ...l, tls: l.tls.mode === 'Terminate' ? tlsDigest({ mode: 'Terminate', certificates: l.tls.certificates }) : l.tls.mode })),
        })),
      }
    : {};
  // Only when not empty: the versions of snapshots without Service endpoints stay what they
  // were, and an empty table is the same content as none.
  const tail = JSON.stringify(reveal(tlsBinds));
  const after = snapshot.endpoints?.length ? `${tail.length > 2 ? `${tail.slice(0, -1)},` : '{'}"endpoints":${endpointsText(snapshot.endpoints, previous?.endpoints)}}` : tail;
  pieces.push(`${text}]${after.length > 2 ? `,${after.slice(1)}` : '}'}`);
  return hashPieces(snapshot.binds, pieces, previous && trails.get(previous.binds));
}

/** `JSON.stringify(fields)` without its closing brace, ready for one more key. */
function open(fields: object): string {
  const head = JSON.stringify(fields);
  return head.length > 2 ? `${head.slice(0, -1)},` : '{';
}

/**
 * JSON.stringify({ ...fields, [key]: value, ...after }) where `raw` is the JSON text of
 * value and `after` is JSON.stringify(after) (fields and after: plain objects).
 */
function withRawField(fields: object, key: string, raw: string, after = '{}'): string {
  const tail = after.length > 2 ? `,${after.slice(1)}` : '}';
  return `${open(fields)}${JSON.stringify(key)}:${raw}${tail}`;
}

/** A piece of the hashed text: text, or a listener's route list (its digest list without the last comma). */
type Piece = string | { readonly routes: readonly RouteIR[]; readonly before: readonly RouteIR[] | undefined };

// The hash of a snapshot's text is taken up where the text of the last one hashed (`previous`)
// starts to differ: its pieces are kept with the hash's state at marks along them (Hash.copy()),
// at least MARK items apart in a route list, so a change to one route of thousands hashes the
// text from the mark before it on. What is hashed is the same text however it was assembled.
/** A route list's items between two marks: a mark's state copy costs about what hashing this many items does. */
const MARK = 256;

interface Mark {
  /** The piece, and the item of it (a route list's), before which the state is taken. */
  readonly piece: number;
  readonly item: number;
  readonly state: Hash;
}

interface Trail {
  /** The text pieces, and the route lists by object. */
  readonly keys: readonly (string | readonly RouteIR[])[];
  readonly marks: readonly Mark[];
  readonly version: string;
}

/** By the binds of the snapshot hashed (ProxySnapshot.binds, the same array in the content and the snapshot withVersion() makes of it). */
const trails = new WeakMap<object, Trail>();

function hashPieces(binds: object, pieces: readonly Piece[], last: Trail | undefined): string {
  const keys = pieces.map((p) => (typeof p === 'string' ? p : p.routes));
  // Where the text starts to differ from the last one's: the first piece that is not the same
  // (a route list: the same array), and in a route list, the items that are the same objects.
  let at = 0;
  let item = 0;
  if (last) {
    while (at < keys.length && at < last.keys.length && keys[at] === last.keys[at]) at++;
    if (at === keys.length && at === last.keys.length) {
      trails.set(binds, last);
      return last.version;
    }
    const now = keys[at];
    const then = last.keys[at];
    if (now !== undefined && typeof now !== 'string' && then !== undefined && typeof then !== 'string') {
      item = commonStart(now, then);
    }
  }
  // The last mark at or before that place. A mark in a route list stands after an item and its
  // comma: it holds while that item is not the list's last (no comma after it).
  const marks: Mark[] = [];
  let from: Mark | undefined;
  if (last) {
    for (const m of last.marks) {
      if (m.piece > at || (m.piece === at && (m.item > item || (m.item > 0 && m.item >= (keys[at] as readonly RouteIR[]).length)))) break;
      marks.push(m);
      from = m;
    }
  }
  const hash = from ? from.state.copy() : createHash('sha256');
  if (!from) marks.push({ piece: 0, item: 0, state: hash.copy() });
  let sinceMark = 0;
  for (let p = from ? from.piece : 0; p < pieces.length; p++) {
    const piece = pieces[p]!;
    const first = from && p === from.piece ? from.item : 0;
    if (p > (from ? from.piece : 0) && sinceMark >= MARK * ITEM) {
      marks.push({ piece: p, item: 0, state: hash.copy() });
      sinceMark = 0;
    }
    if (typeof piece === 'string') {
      hash.update(piece);
      sinceMark += piece.length;
      continue;
    }
    const { routes } = piece;
    if (!routes.length) continue;
    const runs = digestRuns(routes, piece.before);
    for (let i = first; i < routes.length; ) {
      const next = Math.min(routes.length, (Math.floor(i / MARK) + 1) * MARK);
      hashItems(hash, runs, i, next, next === routes.length);
      sinceMark += (next - i) * ITEM;
      if (next < routes.length) {
        marks.push({ piece: p, item: next, state: hash.copy() });
        sinceMark = 0;
      }
      i = next;
    }
  }
  const version = hash.digest('hex').slice(0, 12);
  trails.set(binds, { keys, marks, version });
  return version;
}

function previousRoutes(previous: ProxySnapshot): Map<string, readonly RouteIR[]> {
  const out = new Map<string, readonly RouteIR[]>();
  for (const b of previous.binds) for (const l of b.listeners) out.set(l.name, l.routes);
  return out;
}

// Covers the keys too: a rotated key with the same certificate is a new version.
function tlsDigest(tls: ListenerTlsIR): string {
  const h = createHash('sha256').update(tls.mode);
  for (const c of tls.certificates) h.update('\n').update(JSON.stringify(c.origin)).update('\n').update(c.certificate).update('\n').update(c.key.reveal());
  // Only when set: the versions of snapshots without client validation stay what they were.
  const v = tls.clientValidation;
  if (v) h.update('\nclientValidation\n').update(v.mode).update('\n').update(JSON.stringify(v.origins)).update('\n').update(v.caCertificates);
  return h.digest('base64');
}

const routeDigests = new WeakMap<RouteIR, string>();

// The hash of the route's wire text (secrets in clear, so a rotated credential is a new digest).
function routeDigest(route: RouteIR): string {
  let digest = routeDigests.get(route);
  if (digest === undefined) {
    digest = createHash('sha256').update(routeText(route)).digest('base64');
    routeDigests.set(route, digest);
  }
  return digest;
}

/** One route's item in a digest list: `"<digest>",`, where a SHA-256 digest in base64 is always 44 characters. */
const ITEM = 47;

function item(route: RouteIR): string {
  return `"${routeDigest(route)}",`;
}

// The digest list of a route list (each route's item, the last comma included), by list
// object: a list is never changed once made, and its text is a function of its routes. It is
// kept as runs of items, each a stretch of a text made once (a list made from the one it
// replaces is the runs of the old one at its start and end and a text of the items in between),
// so no list's text is copied whole to make the next one; runs are joined into one text when
// there are more than MAX_RUNS.
interface Run {
  /** The items' text (ASCII: hashed as latin1, which is its UTF-8). */
  readonly text: string;
  /** Items `from` to `from + count` of `text`. */
  readonly from: number;
  readonly count: number;
}

const MAX_RUNS = 32;

const digestLists = new WeakMap<readonly RouteIR[], readonly Run[]>();

/** The items of `routes`, taken from the runs of `before` for the routes at its start and end that are the same objects. */
function digestRuns(routes: readonly RouteIR[], before: readonly RouteIR[] | undefined): readonly Run[] {
  let runs = digestLists.get(routes);
  if (runs !== undefined) return runs;
  const old = before && digestLists.get(before);
  if (before && old !== undefined) {
    const start = commonStart(routes, before);
    const most = Math.min(routes.length, before.length);
    let end = 0;
    while (end < most - start && routes[routes.length - 1 - end] === before[before.length - 1 - end]) end++;
    const middle = routes.length - end - start;
    runs = [...cutRuns(old, 0, start), ...(middle ? [{ text: itemsText(routes.slice(start, start + middle)), from: 0, count: middle }] : []), ...cutRuns(old, before.length - end, before.length)];
    if (runs.length > MAX_RUNS) runs = [{ text: runs.map((r) => r.text.slice(r.from * ITEM, (r.from + r.count) * ITEM)).join(''), from: 0, count: routes.length }];
  } else runs = routes.length ? [{ text: itemsText(routes), from: 0, count: routes.length }] : [];
  digestLists.set(routes, runs);
  return runs;
}

/** How many routes at the start of `a` are those at the start of `b`. */
function commonStart(a: readonly RouteIR[], b: readonly RouteIR[]): number {
  const most = Math.min(a.length, b.length);
  let i = 0;
  while (i < most && a[i] === b[i]) i++;
  return i;
}

function itemsText(routes: readonly RouteIR[]): string {
  return routes.map(item).join('');
}

/** Items `a` to `b` of a list's runs, as runs. */
function cutRuns(runs: readonly Run[], a: number, b: number): Run[] {
  const out: Run[] = [];
  let at = 0;
  for (const r of runs) {
    const lo = Math.max(a, at);
    const hi = Math.min(b, at + r.count);
    if (lo < hi) out.push({ text: r.text, from: r.from + lo - at, count: hi - lo });
    at += r.count;
    if (at >= b) break;
  }
  return out;
}

/** Hashes items `a` to `b` of a list's runs; `last`: `b` is the list's end, whose item goes without its comma. */
function hashItems(hash: Hash, runs: readonly Run[], a: number, b: number, last: boolean): void {
  let at = 0;
  for (const r of runs) {
    const lo = Math.max(a, at);
    const hi = Math.min(b, at + r.count);
    if (lo < hi) {
      const from = (r.from + lo - at) * ITEM;
      const to = (r.from + hi - at) * ITEM - (last && hi === b ? 1 : 0);
      hash.update(r.text.slice(from, to), 'latin1');
    }
    at += r.count;
    if (at >= b) break;
  }
}

// A table of Service endpoints is hashed as the digest of its chunks' digests (CHUNK entries
// each, in order), kept by table: a chunk whose entries are the objects of the same chunk of the
// previous table (`previous`, the table of the snapshot the same source sent before) keeps its
// digest. The controller keeps the entries of unchanged Service ports, and a proxy's decoder
// those it already had, so a change to one Service's endpoints hashes one chunk, and a route
// change none (the table is the same object, or its entries are).
const CHUNK = 64;

interface TableHash {
  readonly table: readonly ServiceEndpointsIR[];
  readonly chunks: readonly string[];
  /** JSON string of the digest: what the version's text holds for the table. */
  readonly text: string;
}

const tableHashes = new WeakMap<readonly ServiceEndpointsIR[], TableHash>();

function endpointsText(table: readonly ServiceEndpointsIR[], previous: readonly ServiceEndpointsIR[] | undefined): string {
  const hit = tableHashes.get(table);
  if (hit) return hit.text;
  const before = previous && tableHashes.get(previous);
  const chunks: string[] = [];
  for (let start = 0, c = 0; start < table.length; start += CHUNK, c++) {
    const end = Math.min(start + CHUNK, table.length);
    let same = before !== undefined && c < before.chunks.length && Math.min(start + CHUNK, before.table.length) === end;
    for (let i = start; same && i < end; i++) same = table[i] === before!.table[i];
    if (same) {
      chunks.push(before!.chunks[c]!);
      continue;
    }
    const h = createHash('sha256');
    for (let i = start; i < end; i++) h.update(i > start ? `,${entryText(table[i]!)}` : entryText(table[i]!));
    chunks.push(h.digest('base64'));
  }
  const text = JSON.stringify(createHash('sha256').update(chunks.join(',')).digest('base64'));
  tableHashes.set(table, { table, chunks, text });
  return text;
}
