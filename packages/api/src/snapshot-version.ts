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
import { createHash } from 'node:crypto';
import { entryText, policyText, reveal, routeText } from './route-text.js';
import type { ListenerTlsIR, ProxySnapshot, RouteIR, ServiceEndpointsIR } from './snapshot.js';

/**
 * The version of `snapshot`. `previous`, when given, is a snapshot the same source sent
 * before: its listeners' route lists (by name) are where an unchanged stretch of routes is
 * copied from. It changes how much work the hash takes, never the version.
 */
export function snapshotVersion(snapshot: Omit<ProxySnapshot, 'version'> | ProxySnapshot, previous?: ProxySnapshot): string {
  const before = previous && previousRoutes(previous);
  // The text of JSON.stringify(skeleton) for the skeleton { source, limits?, binds: [{ port,
  // address, listeners: [{ name, protocol, hostname, tls?, policy, routes: [digest...] }] }],
  // tlsBinds?, endpoints? }, written part by part so the routes' part of each listener can be kept.
  // Only when set: the versions of snapshots with the default bounds stay what they were.
  const head = { source: snapshot.source, ...(snapshot.limits ? { limits: snapshot.limits } : {}) };
  const binds = snapshot.binds.map((b) => {
    const listeners = b.listeners.map((l) => {
      // The policy with its secrets in clear (a Secret's JSON is "[redacted]"): a rotated
      // password hash, API key or client secret of a Gateway's policy is a new version. Its
      // text is kept by policy object, as a route's is (a Gateway's API keys can be thousands).
      const fields = withRawField({ name: l.name, protocol: l.protocol, hostname: l.hostname, ...(l.protocol === 'HTTPS' ? { tls: tlsDigest(l.tls) } : {}) }, 'policy', policyText(l.policy));
      return `${fields.slice(0, -1)},"routes":[${digestList(l.routes, before?.get(l.name)).slice(0, -1)}]}`;
    });
    return withRawField({ port: b.port, address: b.address }, 'listeners', `[${listeners.join(',')}]`);
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
  const text = withRawField(head, 'binds', `[${binds.join(',')}]`, after);
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

/**
 * JSON.stringify({ ...fields, [key]: value, ...after }) where `raw` is the JSON text of
 * value and `after` is JSON.stringify(after) (fields and after: plain objects).
 */
function withRawField(fields: object, key: string, raw: string, after = '{}'): string {
  const head = JSON.stringify(fields);
  const tail = after.length > 2 ? `,${after.slice(1)}` : '}';
  return `${head.length > 2 ? `${head.slice(0, -1)},` : '{'}${JSON.stringify(key)}:${raw}${tail}`;
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
// object: a list is never changed once made, and its text is a function of its routes.
const digestLists = new WeakMap<readonly RouteIR[], string>();

/** The items of `routes`, copied from the text of `before` for the routes at its start and end that are the same objects. */
function digestList(routes: readonly RouteIR[], before: readonly RouteIR[] | undefined): string {
  let text = digestLists.get(routes);
  if (text !== undefined) return text;
  const old = before && digestLists.get(before);
  if (before && old !== undefined) {
    let start = 0;
    const most = Math.min(routes.length, before.length);
    while (start < most && routes[start] === before[start]) start++;
    let end = 0;
    while (end < most - start && routes[routes.length - 1 - end] === before[before.length - 1 - end]) end++;
    let middle = '';
    for (let i = start; i < routes.length - end; i++) middle += item(routes[i]!);
    text = old.slice(0, start * ITEM) + middle + old.slice((before.length - end) * ITEM);
  } else {
    text = '';
    for (const r of routes) text += item(r);
  }
  digestLists.set(routes, text);
  return text;
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
