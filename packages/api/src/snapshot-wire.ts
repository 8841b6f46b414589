// Sending a ProxySnapshot: the wire encoding, the validator on the receiving side, and the
// content version.
//
// Route by route: a snapshot of a large Gateway is mostly routes, and a change touches few of
// them. A route object is immutable, so its wire text, its digest and the fact that it passed
// validation are kept by identity (the translator reuses the objects of unchanged routes); a
// receiver (SnapshotDecoder) keeps the routes it decoded by their wire text and validates and
// wraps only the texts it has not seen. The result is what a whole-snapshot pass gives: every
// route of every snapshot has been validated, the version is checked against the content.
//
// In memory a credential is a Secret, which serialises as "[redacted]" so that a config
// dump, a trace or a log line cannot leak it. The snapshot stream must carry the value, so
// toWire() reveals it into `{ "secret": "..." }` and fromWire() wraps it again; nothing else
// reveals. JSON.stringify(snapshot) keeps redacting.
import { compile } from './ajv.js';
import { commonEnds } from './list-search.js';
import { DEFAULT_LIMITS, type EvaluationLimits } from './limits.js';
import { checkRegexes } from './rules.js';
import { Secret } from './secret.js';
import { entryText, keepEntryText, keepRouteText, reveal, routeText } from './route-text.js';
import { snapshotVersion } from './snapshot-version.js';
import { WireRouteSchema, WireServiceEndpointsSchema, WireSkeleton, type WireSnapshot, type ToWire } from './snapshot-schema.js';
import type { BackendFilterIR, BackendIR, FilterIR, HeaderValueIR, ListenerIR, PolicyIR, ProviderIR, ProxySnapshot, RouteIR, ServiceEndpointsIR, TlsBindIR, TlsListenerIR } from './snapshot.js';
import { ValidationError, type Problem } from './validation-error.js';

// Skeletons only: routes are taken out before and checked one by one (validateRoute).
const validateWire = compile(WireSkeleton);
const validateRoute = compile(WireRouteSchema);
const validateEntry = compile(WireServiceEndpointsSchema);
type WireRoute = ToWire<RouteIR>;
type WireListener = ToWire<ListenerIR>;

/** A deep copy in plain JSON values, every Secret revealed as `{ secret }`. */
export function toWire(snapshot: ProxySnapshot): WireSnapshot {
  return reveal(snapshot) as WireSnapshot;
}

/**
 * The snapshot as the stream sends it: JSON text with secrets in clear. The same text as
 * JSON.stringify(toWire(snapshot)) but for key order (`routes` last in a listener), assembled
 * from each route's kept text so that only new routes are serialised.
 */
export function encodeSnapshot(snapshot: ProxySnapshot): string {
  const binds = snapshot.binds.map((b) => {
    const listeners = b.listeners.map((l) => {
      const { routes, ...rest } = l;
      return `${JSON.stringify(reveal(rest)).slice(0, -1)},"routes":[${routes.map(routeText).join(',')}]}`;
    });
    return `${JSON.stringify({ port: b.port, address: b.address }).slice(0, -1)},"listeners":[${listeners.join(',')}]}`;
  });
  const head = {
    version: snapshot.version,
    source: snapshot.source,
    ...(snapshot.limits ? { limits: snapshot.limits } : {}),
    ...(snapshot.tlsBinds ? { tlsBinds: reveal(snapshot.tlsBinds) } : {}),
    ...(snapshot.endpoints?.length ? { endpoints: snapshot.endpoints } : {}),
  };
  return `${JSON.stringify(head).slice(0, -1)},"binds":[${binds.join(',')}]}`;
}

/**
 * The snapshot as the stream sends it, in parts: the snapshot's JSON with every listener's
 * routes left empty, and each route's own JSON text, listener after listener (`routeCounts[i]`
 * of them belong to the i-th listener in document order). A receiver looks each route text up
 * among the routes it already has and parses only the new ones (SnapshotDecoder.decodeParts),
 * so a change to one route of thousands costs it one route, not a parse of the whole snapshot.
 */
export interface SnapshotParts {
  readonly skeleton: string;
  readonly routes: readonly string[];
  readonly routeCounts: readonly number[];
  /**
   * Each entry of the snapshot's Service endpoints (ProxySnapshot.endpoints) as its own JSON
   * text, in order, the skeleton carrying none (in a delta, the entries the receiver does not
   * hold): an endpoint change sends one entry, a route change none.
   */
  readonly endpoints?: readonly string[];
  /** A delta (encodeSnapshotDelta): `routes` holds the new routes only, `endpoints` the new entries only. */
  readonly base?: DeltaBase;
}

/**
 * How a delta names the routes the receiver has: `version` is the snapshot they come from,
 * `refs` has one entry per route in document order: 0 for the next text of `routes`, k > 0
 * for the route at position k-1 of the base snapshot (document order, from 0).
 */
export interface DeltaBase {
  readonly version: string;
  readonly refs: readonly number[];
  /** One per entry of the endpoints, in order, counted as `refs` are: 0 the next text of `endpoints`, k > 0 the base's entry at position k-1. */
  readonly endpointRefs?: readonly number[];
}

/** Each entry of a snapshot's Service endpoints by object, with its position (what a delta's endpointRefs count). */
export function endpointPositions(snapshot: ProxySnapshot): Map<ServiceEndpointsIR, number> {
  return new Map((snapshot.endpoints ?? []).map((e, i) => [e, i]));
}

/** Each route of a snapshot by object, with its first position in document order (what a delta's refs count). */
export function routePositions(snapshot: ProxySnapshot): Map<RouteIR, number> {
  const positions = new Map<RouteIR, number>();
  let at = 0;
  for (const b of snapshot.binds) {
    for (const l of b.listeners) {
      for (const r of l.routes) {
        if (!positions.has(r)) positions.set(r, at);
        at++;
      }
    }
  }
  return positions;
}

/** The base of a delta: its version, where its routes are (routePositions() of it, or a function making that when first needed), and optionally its entries and the snapshot itself. */
export interface DeltaBaseOf {
  readonly version: string;
  readonly positions: ReadonlyMap<RouteIR, number> | (() => ReadonlyMap<RouteIR, number>);
  readonly entries?: ReadonlyMap<ServiceEndpointsIR, number>;
  /**
   * The base snapshot: a listener's routes at the head and tail its list shares with the base's
   * list of the same name are sent as their positions there without a lookup, and the few
   * between are looked up (or, when only a few, sent as texts, which the receiver takes as the
   * objects it holds): no walk of lookups over thousands of routes.
   */
  readonly snapshot?: ProxySnapshot;
}

/** Between a list's common head and tail, at most this many routes are sent as texts rather than looked up in the base's positions. */
const TEXTS_BETWEEN = 16;

/**
 * encodeSnapshotParts() relative to a snapshot the receiver serves (`positions`:
 * routePositions() of it): a route object found there is sent as its position, any other as
 * its text. The translator keeps the objects of unchanged routes, so a change to one route of
 * thousands sends one text and a list of small numbers.
 */
export function encodeSnapshotDelta(snapshot: ProxySnapshot, base: DeltaBaseOf): SnapshotParts {
  const routes: string[] = [];
  const routeCounts: number[] = [];
  const refs: number[] = [];
  let positions = typeof base.positions === 'function' ? null : base.positions;
  const positionOf = (r: RouteIR): number | undefined => (positions ??= (base.positions as () => ReadonlyMap<RouteIR, number>)()).get(r);
  const baseLists = base.snapshot ? listsWithOffsets(base.snapshot) : null;
  // A route sent as text is taken by a receiver as the object it holds for that text only under
  // the same bounds (under others it checks and makes it again): then positions are looked up.
  const textsHold = base.snapshot !== undefined && JSON.stringify(snapshot.limits ?? null) === JSON.stringify(base.snapshot.limits ?? null);
  for (const b of snapshot.binds) {
    for (const l of b.listeners) {
      const list = l.routes;
      const was = baseLists?.get(l.name);
      const { head, tail } = was ? commonEnds(was.routes, list) : { head: 0, tail: 0 };
      const end = list.length - tail;
      // (Positions in `was`, a stretch of the base's order from `was.at`.)
      for (let i = 0; i < head; i++) refs.push(was!.at + i + 1);
      const asTexts = textsHold && was !== undefined && positions === null && end - head <= TEXTS_BETWEEN;
      for (let i = head; i < end; i++) {
        const r = list[i]!;
        const at = asTexts ? undefined : positionOf(r);
        if (at === undefined) {
          refs.push(0);
          routes.push(routeText(r));
        } else refs.push(at + 1);
      }
      for (let i = end; i < list.length; i++) refs.push(was!.at + i - list.length + was!.routes.length + 1);
      routeCounts.push(list.length);
    }
  }
  const endpoints: string[] = [];
  const endpointRefs: number[] = [];
  for (const e of snapshot.endpoints ?? []) {
    const at = base.entries?.get(e);
    if (at === undefined) {
      endpointRefs.push(0);
      endpoints.push(entryText(e));
    } else endpointRefs.push(at + 1);
  }
  return { skeleton: encodeSkeleton(snapshot), routes, routeCounts, endpoints, base: { version: base.version, refs, endpointRefs } };
}

export function encodeSnapshotParts(snapshot: ProxySnapshot): SnapshotParts {
  const routes: string[] = [];
  const routeCounts: number[] = [];
  for (const b of snapshot.binds) {
    for (const l of b.listeners) {
      for (const r of l.routes) routes.push(routeText(r));
      routeCounts.push(l.routes.length);
    }
  }
  return { skeleton: encodeSkeleton(snapshot), routes, routeCounts, endpoints: (snapshot.endpoints ?? []).map(entryText) };
}

/**
 * Validates a received snapshot (parsed JSON) and returns the in-memory IR. Throws a
 * ValidationError naming every bad field; a snapshot whose version is not the hash of its
 * content is refused too (it was altered or built by a different encoder).
 */
export function fromWire(value: unknown, subject = 'snapshot'): ProxySnapshot {
  return new SnapshotDecoder().fromWire(value, subject);
}

/** Parses and validates the text encodeSnapshot() produced. */
export function decodeSnapshot(text: string, subject = 'snapshot'): ProxySnapshot {
  return new SnapshotDecoder().decode(text, subject);
}

/**
 * A delta that names what this decoder does not hold (another base version, a position past
 * its routes): nothing is wrong with the snapshot, the sender must send it in full.
 */
export class DeltaMismatchError extends ValidationError {}

/**
 * decodeSnapshot() for a receiver of successive snapshots: the routes of the last snapshot it
 * decoded are kept by their wire text, and a route whose text is unchanged is taken as it was
 * (validated, wrapped, hashed) instead of being checked again. A snapshot that fails keeps
 * the routes of the last good one.
 *
 * A delta costs what it changes: its refs are read as numbers (no object, no lookup per route),
 * a listener whose refs are the base's list at its place gets that array, and the routes by
 * text are patched (the new routes' texts added, those of the base's routes no ref names
 * removed) rather than written again.
 */
export class SnapshotDecoder {
  /**
   * The last good snapshot's routes by wire text, one entry per route object (a route on two
   * listeners is one object, at two positions). A delta patches it, a whole snapshot replaces it.
   */
  #routes = new Map<string, RouteIR>();
  /** The last good snapshot's version and its routes in document order (what a delta refers to). */
  #version: string | null = null;
  #order: readonly RouteIR[] = [];
  /**
   * When a route object of `#order` is at more than one position: the first position of each
   * position's object (a delta marks the routes it names there, so a route named at any of its
   * places stays). Null when every position holds an object of its own.
   */
  #firstAt: Int32Array | null = null;
  /** The bounds the routes held were checked with (JSON): routes kept under other bounds are checked again. */
  #limits = JSON.stringify(DEFAULT_LIMITS);
  /** The last good snapshot: the version of the next is hashed from it (only the routes that changed, snapshotVersion). */
  #snapshot: ProxySnapshot | undefined = undefined;
  /** The last good snapshot's Service endpoint entries, by text and in order (what a delta's endpointRefs refer to). */
  #entries = new Map<string, ServiceEndpointsIR>();
  #entryOrder: readonly ServiceEndpointsIR[] = [];
  /**
   * The last good snapshot's listener policies, by wire text: a policy that comes again is the
   * object it was, as a route is (a proxy keeps the compiled routes of a listener while its
   * policy is the same object, and most Gateways have a policy on every listener).
   */
  #policies = new Map<string, PolicyIR>();
  /** What the decoder held before the last decode: rollback() returns to it. */
  #before: {
    routes: Map<string, RouteIR>;
    /** What a delta changed in `routes` (the map it patched): rollback() undoes it. */
    patched: RoutesPatch | null;
    policies: Map<string, PolicyIR>;
    version: string | null;
    order: readonly RouteIR[];
    firstAt: Int32Array | null;
    limits: string;
    snapshot: ProxySnapshot | undefined;
    entries: Map<string, ServiceEndpointsIR>;
    entryOrder: readonly ServiceEndpointsIR[];
  } | null = null;

  /**
   * Forgets the last snapshot decoded, for a receiver that could not apply it: the decoder
   * holds the one before again, which is what the receiver still serves (a delta names it).
   */
  rollback(): void {
    const before = this.#before;
    if (!before) return;
    if (before.patched) {
      for (const text of before.patched.added) before.routes.delete(text);
      for (const [text, route] of before.patched.removed) before.routes.set(text, route);
    }
    this.#routes = before.routes;
    this.#policies = before.policies;
    this.#version = before.version;
    this.#order = before.order;
    this.#firstAt = before.firstAt;
    this.#limits = before.limits;
    this.#snapshot = before.snapshot;
    this.#entries = before.entries;
    this.#entryOrder = before.entryOrder;
    this.#before = null;
  }

  decode(text: string, subject = 'snapshot'): ProxySnapshot {
    return this.fromWire(parseJson(text, subject), subject);
  }

  fromWire(value: unknown, subject = 'snapshot'): ProxySnapshot {
    const routes: unknown[][] = [];
    const skeleton = withoutRoutes(value, routes);
    // A route's text is what identifies it; here it has to be written again from the parsed value.
    return this.#decode(skeleton, routes.map((list) => list.map((r) => ({ text: JSON.stringify(r), value: r }))), subject);
  }

  /** The version of the last snapshot decoded (null before the first): the base a delta must name. */
  get version(): string | null {
    return this.#version;
  }

  /**
   * The parts encodeSnapshotParts() or encodeSnapshotDelta() wrote. Parts without routes and
   * counts are a whole snapshot's text (decode()).
   */
  decodeParts(parts: SnapshotParts, subject = 'snapshot'): ProxySnapshot {
    if (parts.base) return this.#decodeDelta(parts, parts.base, subject);
    if (!parts.routes.length && !parts.routeCounts.length && !parts.endpoints?.length) return this.decode(parts.skeleton, subject);
    const skeleton = partsSkeleton(parts, parts.routes.length, 'routes', subject);
    let next = 0;
    const entries = parts.endpoints?.map((text): EntryEntry => ({ text }));
    return this.#decode(skeleton, parts.routeCounts.map((c) => parts.routes.slice(next, (next += c)).map((text) => ({ text }))), subject, entries);
  }

  #decodeDelta(parts: SnapshotParts, base: DeltaBase, subject: string): ProxySnapshot {
    const problem = (path: string, message: string): never => {
      throw new ValidationError(subject, [{ path, message }]);
    };
    const mismatch = (path: string, message: string): never => {
      throw new DeltaMismatchError(subject, [{ path, message }]);
    };
    if (base.version !== this.#version) {
      mismatch('baseVersion', `got ${JSON.stringify(base.version)}; this proxy holds ${this.#version === null ? 'no snapshot yet' : JSON.stringify(this.#version)}: send the full snapshot`);
    }
    const skeleton = partsSkeleton(parts, base.refs.length, 'route refs', subject);
    // One pass over the refs, numbers only: each checked, and the base's routes they name
    // marked (at the first position of their object).
    const refs = base.refs;
    const order = this.#order;
    const named = new Uint8Array(order.length);
    const { texts, bad, twice } = markRefs(refs, this.#firstAt, named);
    if (texts !== parts.routes.length) problem('routes', `got ${parts.routes.length} route texts for ${texts} refs of 0; expected one text per new route`);
    if (bad >= 0) mismatch(`routeRefs[${bad}]`, `got ${refs[bad]}; the base snapshot ${this.#version} has ${order.length} routes (refs are 1 to ${order.length}, or 0 for a route sent as text)`);
    const endpointRefs = base.endpointRefs ?? [];
    const fresh = endpointRefs.reduce((n, r) => n + (r === 0 ? 1 : 0), 0);
    const entryTexts = parts.endpoints ?? [];
    if (fresh !== entryTexts.length) problem('endpoints', `got ${entryTexts.length} entry texts for ${fresh} endpoint refs of 0; expected one text per new entry`);
    let nextEntry = 0;
    const serviceEntries = endpointRefs.map((ref, i): EntryEntry => {
      if (ref === 0) return { text: entryTexts[nextEntry++]! };
      const entry = Number.isInteger(ref) && ref > 0 ? this.#entryOrder[ref - 1] : undefined;
      return entry ? { entry } : mismatch(`endpointRefs[${i}]`, `got ${ref}; the base snapshot ${this.#version} has ${this.#entryOrder.length} endpoint entries (refs are 1 to ${this.#entryOrder.length}, or 0 for an entry sent as text)`);
    });
    return this.#decode(skeleton, { refs, texts: parts.routes, counts: parts.routeCounts, named, twice }, subject, serviceEntries);
  }

  /** The entries of the Service endpoints: one held (by reference, or by its text) as it was, a new one parsed and checked. */
  #entriesOf(list: readonly EntryEntry[], problems: Problem[]): { entries: ServiceEndpointsIR[]; seen: Map<string, ServiceEndpointsIR> } {
    const seen = new Map<string, ServiceEndpointsIR>();
    const entries: ServiceEndpointsIR[] = [];
    const names = new Set<string>();
    list.forEach((item, i) => {
      const path = `endpoints[${i}]`;
      let entry: ServiceEndpointsIR | undefined;
      let text: string;
      if ('entry' in item) {
        entry = item.entry;
        text = entryText(entry);
      } else {
        text = item.text;
        entry = seen.get(text) ?? this.#entries.get(text);
        if (entry === undefined) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch (err) {
            problems.push({ path, message: `not JSON (${(err as Error).message})` });
            return;
          }
          const checked = validateEntry(parsed);
          if (!checked.ok) {
            problems.push(...checked.problems.map((p) => ({ path: p.path ? `${path}.${p.path}` : path, message: p.message })));
            return;
          }
          entry = checked.value;
          keepEntryText(entry, text);
        }
      }
      noteEntryName(names, entry.name, i, problems);
      seen.set(text, entry);
      entries.push(entry);
    });
    return { entries, seen };
  }

  /**
   * The snapshot without its routes against the whole schema, then each route: one a delta
   * took from the base, or whose text was in the last good snapshot, is taken as it was; a new
   * one is parsed (when it came as text), checked on its own and wrapped. A delta under the
   * bounds the routes held were checked with is read by DeltaLists; under other bounds, every
   * route it names is checked again.
   */
  #decode(skeleton: unknown, input: RouteEntry[][] | DeltaRoutes, subject: string, serviceEntries?: readonly EntryEntry[]): ProxySnapshot {
    const result = validateWire(skeleton);
    if (!result.ok) throw new ValidationError(subject, result.problems);
    const wire = result.value;
    const problems = crossCheck(wire);
    // In parts the entries travel apart: the skeleton carries none.
    if (serviceEntries && wire.endpoints !== undefined) problems.push({ path: 'endpoints', message: 'the skeleton of a snapshot sent in parts carries no endpoints; each entry is a text of its own' });
    const apart = serviceEntries ? this.#entriesOf(serviceEntries, problems) : null;
    const limits = wire.limits ?? DEFAULT_LIMITS;
    const limitsKey = JSON.stringify(limits);
    const sameLimits = limitsKey === this.#limits;
    const delta = Array.isArray(input) ? null : sameLimits ? new DeltaLists(input, this.#order, this.#firstAt, this.#routes, this.#snapshot, limits, problems) : null;
    const routes = Array.isArray(input) ? input : delta ? [] : refEntries(input, this.#order);
    // Routes held were checked under the bounds of the last snapshot: reused only under the same
    // (a delta's, under other bounds: those it names, each checked again where it is named, so
    // that a text of one of them is that object too).
    const held = sameLimits ? this.#routes : Array.isArray(input) ? new Map<string, RouteIR>() : namedByText(input, this.#order);
    const seen = new Map<string, RouteIR>();
    const order: RouteIR[] = [];
    const policies = new Map<string, PolicyIR>();
    /** The listener's policy: the last snapshot's object when its text is the same. */
    const policyOf = (wire: WireListener['policy']): PolicyIR | null => {
      if (wire === null) return null;
      const text = JSON.stringify(wire);
      const policy = policies.get(text) ?? this.#policies.get(text) ?? wrapPolicy<PolicyIR>(wire)!;
      policies.set(text, policy);
      return policy;
    };
    /** A listener's routes from its entries (a whole snapshot, or a delta under other bounds). */
    const listOf = (list: readonly RouteEntry[], bi: number, li: number): RouteIR[] => {
      const out: RouteIR[] = [];
      list.forEach((entry, ri) => {
        if ('route' in entry) {
          // Named by a delta under other bounds than the base's: checked again.
          const checked = checkWireRoute(JSON.parse(routeText(entry.route)), `binds[${bi}].listeners[${li}].routes[${ri}]`, limits);
          if (!checked.ok) {
            problems.push(...checked.problems);
            return;
          }
          seen.set(routeText(entry.route), entry.route);
          order.push(entry.route);
          out.push(entry.route);
          return;
        }
        const { text, value } = entry;
        let route = seen.get(text) ?? held.get(text);
        if (route === undefined) {
          const path = `binds[${bi}].listeners[${li}].routes[${ri}]`;
          let parsed = value;
          if (parsed === undefined) {
            try {
              parsed = JSON.parse(text);
            } catch (err) {
              problems.push({ path, message: `not JSON (${(err as Error).message})` });
              return;
            }
          }
          const checked = checkWireRoute(parsed, path, limits);
          if (!checked.ok) {
            problems.push(...checked.problems);
            return;
          }
          route = wrapRoute(checked.route);
          // Its text is the one received: the digest (routeDigest) hashes it without writing it again.
          keepRouteText(route, text);
        }
        seen.set(text, route);
        order.push(route);
        out.push(route);
      });
      return out;
    };
    let at = 0;
    const { tlsBinds, endpoints: inSkeleton, ...rest } = wire;
    const endpoints = apart ? apart.entries : inSkeleton;
    const snapshot: ProxySnapshot = {
      ...rest,
      ...(tlsBinds ? { tlsBinds: tlsBinds.map(wrapTlsBind) } : {}),
      ...(endpoints?.length ? { endpoints } : {}),
      binds: wire.binds.map((b, bi) => ({
        ...b,
        listeners: b.listeners.map((l, li) => {
          const last = this.#snapshot?.binds[bi]?.listeners[li]?.routes;
          const routesOf = delta ? delta.list(bi, li, last) : sameList(last, listOf(routes[at++]!, bi, li));
          return wrapListener(l, policyOf(l.policy), routesOf);
        }),
      })),
    };
    if (!problems.length) {
      const expected = snapshotVersion(snapshot, this.#snapshot);
      if (expected !== wire.version) {
        problems.push({ path: 'version', message: `got ${JSON.stringify(wire.version)}; the content hashes to ${JSON.stringify(expected)}` });
      }
    }
    if (problems.length) throw new ValidationError(subject, problems);
    this.#before = {
      routes: this.#routes,
      patched: null,
      policies: this.#policies,
      version: this.#version,
      order: this.#order,
      firstAt: this.#firstAt,
      limits: this.#limits,
      snapshot: this.#snapshot,
      entries: this.#entries,
      entryOrder: this.#entryOrder,
    };
    if (delta) {
      const next = delta.finish();
      this.#before.patched = patchRoutes(this.#routes, next.gone, delta.added);
      this.#order = next.order;
      this.#firstAt = next.firstAt;
    } else {
      this.#routes = seen;
      this.#order = order;
      // Each text is one object: distinct texts as many as positions means no object at two (a
      // delta under other bounds may hold an object and a new one of the same text: counted).
      this.#firstAt = Array.isArray(input) && seen.size === order.length ? null : firstPositions(order);
    }
    this.#entries = apart ? apart.seen : new Map((snapshot.endpoints ?? []).map((e) => [entryText(e), e]));
    this.#entryOrder = snapshot.endpoints ?? [];
    this.#snapshot = snapshot;
    this.#policies = policies;
    this.#version = snapshot.version;
    this.#limits = limitsKey;
    return snapshot;
  }
}

/** What a delta changed in the decoder's routes by text: the texts it added, the entries it removed. */
interface RoutesPatch {
  readonly added: readonly string[];
  readonly removed: readonly (readonly [string, RouteIR])[];
}

/** Removes the texts of `gone` from `routes` and adds `added`; what it did, for rollback(). */
function patchRoutes(routes: Map<string, RouteIR>, gone: readonly RouteIR[], added: readonly (readonly [string, RouteIR])[]): RoutesPatch {
  const removed: [string, RouteIR][] = [];
  for (const route of gone) {
    const text = routeText(route);
    if (routes.get(text) !== route) continue;
    routes.delete(text);
    removed.push([text, route]);
  }
  for (const [text, route] of added) routes.set(text, route);
  return { added: added.map(([text]) => text), removed };
}

/** The first position of each position's object in `order`; null when no object is at two. */
function firstPositions(order: readonly RouteIR[]): Int32Array | null {
  const first = new Map<RouteIR, number>();
  const out = new Int32Array(order.length);
  let twice = false;
  order.forEach((route, p) => {
    const at = first.get(route);
    if (at === undefined) first.set(route, (out[p] = p));
    else {
      out[p] = at;
      twice = true;
    }
  });
  return twice ? out : null;
}

/** A delta's routes, checked by #decodeDelta: its refs and texts, listener by listener (`counts`). */
interface DeltaRoutes {
  readonly refs: readonly number[];
  readonly texts: readonly string[];
  readonly counts: readonly number[];
  /** 1 at each position of the base the refs name (at the first position of its object), of the base's length. */
  readonly named: Uint8Array;
  /** Some route of the base is named twice. */
  readonly twice: boolean;
}

/** A delta's routes as entries, one per ref (a delta under other bounds: every route it names is checked again). */
function refEntries(delta: DeltaRoutes, order: readonly RouteIR[]): RouteEntry[][] {
  let at = 0;
  let next = 0;
  return delta.counts.map((c) => delta.refs.slice(at, (at += c)).map((ref): RouteEntry => (ref === 0 ? { text: delta.texts[next++]! } : { route: order[ref - 1]! })));
}

/** The routes of the base a delta names, by text. */
function namedByText(delta: DeltaRoutes, order: readonly RouteIR[]): Map<string, RouteIR> {
  const out = new Map<string, RouteIR>();
  for (const ref of delta.refs) if (ref !== 0) out.set(routeText(order[ref - 1]!), order[ref - 1]!);
  return out;
}

/**
 * The route lists of a delta under the bounds its base's routes were checked with, listener by
 * listener (list()), then what the decoder holds next (finish()). A listener whose refs are the
 * base's list at its place is that array, without a route read; another list is its refs'
 * routes; only the routes sent as text are looked up, and only new ones checked.
 */
class DeltaLists {
  readonly #delta: DeltaRoutes;
  readonly #base: readonly RouteIR[];
  readonly #firstAt: Int32Array | null;
  readonly #held: ReadonlyMap<string, RouteIR>;
  readonly #limits: EvaluationLimits;
  readonly #problems: Problem[];
  /** Where each list of the base snapshot starts in `#base`, by bind and listener. */
  readonly #starts: readonly (readonly number[])[];
  #ref = 0;
  #text = 0;
  /** The routes the texts gave, in order, and by text (a text sent twice is one route). */
  readonly #textRoutes: RouteIR[] = [];
  readonly #byText = new Map<string, RouteIR>();
  /** Routes of the base sent as text (the sender built an equal object anew). */
  readonly #revived: RouteIR[] = [];
  /** Some text was sent twice. */
  #twice = false;
  readonly #lists: (readonly RouteIR[])[] = [];
  /** The new routes, by text. */
  readonly added: (readonly [string, RouteIR])[] = [];

  constructor(delta: DeltaRoutes, base: readonly RouteIR[], firstAt: Int32Array | null, held: ReadonlyMap<string, RouteIR>, snapshot: ProxySnapshot | undefined, limits: EvaluationLimits, problems: Problem[]) {
    this.#delta = delta;
    this.#base = base;
    this.#firstAt = firstAt;
    this.#held = held;
    this.#limits = limits;
    this.#problems = problems;
    let at = 0;
    this.#starts = (snapshot?.binds ?? []).map((b) =>
      b.listeners.map((l) => {
        const start = at;
        at += l.routes.length;
        return start;
      }),
    );
  }

  /** The routes of the next listener (at `bi`, `li`); `last`, the base's list at that place. */
  list(bi: number, li: number, last: readonly RouteIR[] | undefined): readonly RouteIR[] {
    const { refs, texts } = this.#delta;
    const count = this.#delta.counts[this.#lists.length]!;
    const at = this.#ref;
    this.#ref += count;
    // As many refs as are the base's list at this place from its start: those routes are its.
    const same = last === undefined ? 0 : baseRun(refs, at, Math.min(count, last.length), (this.#starts[bi]?.[li] ?? 0) + 1);
    let list: readonly RouteIR[];
    if (same === count) list = last === undefined ? [] : last.length === count ? last : last.slice(0, count);
    else {
      const out = last === undefined ? [] : last.slice(0, same);
      const base = this.#base;
      for (let i = same; i < count; i++) {
        const ref = refs[at + i]!;
        if (ref !== 0) out.push(base[ref - 1]!);
        else {
          const route = this.#fromText(texts[this.#text++]!, `binds[${bi}].listeners[${li}].routes[${i}]`);
          if (route !== undefined) out.push(route);
        }
      }
      list = sameList(last, out, same);
    }
    this.#lists.push(list);
    return list;
  }

  /** A route sent as text: the one this delta already gave for it, the base's, or a new one checked. */
  #fromText(text: string, path: string): RouteIR | undefined {
    let route = this.#byText.get(text);
    if (route !== undefined) this.#twice = true;
    else {
      route = this.#held.get(text);
      if (route !== undefined) this.#revived.push(route);
      else {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (err) {
          this.#problems.push({ path, message: `not JSON (${(err as Error).message})` });
          return undefined;
        }
        const checked = checkWireRoute(parsed, path, this.#limits);
        if (!checked.ok) {
          this.#problems.push(...checked.problems);
          return undefined;
        }
        route = wrapRoute(checked.route);
        // Its text is the one received: the digest (routeDigest) hashes it without writing it again.
        keepRouteText(route, text);
        this.added.push([text, route]);
      }
      this.#byText.set(text, route);
    }
    this.#textRoutes.push(route);
    return route;
  }

  /**
   * Once every list is made (and the snapshot is good): the routes in document order, where
   * objects at two positions are (SnapshotDecoder.#firstAt), and the base's routes the
   * snapshot no longer has (no ref named them, no text gave them again).
   */
  finish(): { order: readonly RouteIR[]; firstAt: Int32Array | null; gone: RouteIR[] } {
    const lists = this.#lists;
    const order = lists.length === 1 ? lists[0]! : ([] as RouteIR[]).concat(...lists);
    const base = this.#base;
    const firstAt = this.#firstAt;
    const named = this.#delta.named;
    let gone = unnamed(base, named, firstAt);
    let twice = this.#delta.twice || this.#twice;
    // A route sent as text that a ref names too is at two positions.
    const alsoNamed = new Set<RouteIR>();
    if (this.#revived.length) {
      const unnamed = new Set(gone);
      for (const route of this.#revived) if (!unnamed.has(route)) alsoNamed.add(route);
      if (alsoNamed.size) twice = true;
      const revived = new Set(this.#revived);
      gone = gone.filter((route) => !revived.has(route));
    }
    return { order, firstAt: twice ? this.#firstPositions(order.length, alsoNamed) : null, gone };
  }

  /** firstPositions() of the new order, from the refs (a route named by refs is known by the first position of its object in the base). */
  #firstPositions(length: number, alsoNamed: ReadonlySet<RouteIR>): Int32Array {
    const refs = this.#delta.refs;
    const base = this.#base;
    const firstAt = this.#firstAt;
    const out = new Int32Array(length);
    // By the first position of an object in the base: its first position in the new order.
    const firstNew = new Int32Array(base.length).fill(-1);
    const byObject = new Map<RouteIR, number>();
    let inBase: Map<RouteIR, number> | null = null;
    let t = 0;
    for (let q = 0; q < refs.length; q++) {
      const ref = refs[q]!;
      let at: number;
      if (ref !== 0) at = firstAt === null ? ref - 1 : firstAt[ref - 1]!;
      else {
        const route = this.#textRoutes[t++]!;
        const inBaseAt = alsoNamed.has(route) ? (inBase ??= new Map(base.map((r, p) => [r, firstAt === null ? p : firstAt[p]!]))).get(route) : undefined;
        if (inBaseAt === undefined) {
          const first = byObject.get(route);
          if (first === undefined) byObject.set(route, q);
          out[q] = first ?? q;
          continue;
        }
        at = inBaseAt;
      }
      if (firstNew[at]! < 0) firstNew[at] = q;
      out[q] = firstNew[at]!;
    }
    return out;
  }
}

/**
 * The last snapshot's route list at the same place when it holds the same route objects in the
 * same order: a proxy takes a listener's compiled routes whole while its list is the same array
 * (an endpoint change walks no route).
 */
function sameList(last: readonly RouteIR[] | undefined, routes: RouteIR[], from = 0): readonly RouteIR[] {
  if (last === undefined || last.length !== routes.length) return routes;
  for (let i = from; i < routes.length; i++) if (last[i] !== routes[i]) return routes;
  return last;
}

/**
 * A delta's refs checked and the base positions they name marked in `named` (at the first
 * position of their object, `firstAt`): the refs of 0 (texts), the first ref that names no
 * route of the base (-1: none), whether a route is named twice.
 */
function markRefs(refs: readonly number[], firstAt: Int32Array | null, named: Uint8Array): { texts: number; bad: number; twice: boolean } {
  const length = named.length;
  let texts = 0;
  let bad = -1;
  let twice = false;
  for (let i = 0; i < refs.length; i++) {
    const ref = refs[i]!;
    if (ref === 0) texts++;
    else if (ref > 0 && ref <= length && Number.isInteger(ref)) {
      const at = firstAt === null ? ref - 1 : firstAt[ref - 1]!;
      if (named[at] === 1) twice = true;
      named[at] = 1;
    } else if (bad < 0) bad = i;
  }
  return { texts, bad, twice };
}

/** How many of the `most` refs from `at` are `first`, `first + 1`, ... (a stretch of the base in its order). */
function baseRun(refs: readonly number[], at: number, most: number, first: number): number {
  let i = 0;
  while (i < most && refs[at + i] === first + i) i++;
  return i;
}

/** The routes of `base` at the positions no ref named (at the first position of their object). */
function unnamed(base: readonly RouteIR[], named: Uint8Array, firstAt: Int32Array | null): RouteIR[] {
  const out: RouteIR[] = [];
  for (let p = named.indexOf(0); p >= 0; p = named.indexOf(0, p + 1)) if (firstAt === null || firstAt[p] === p) out.push(base[p]!);
  return out;
}

/** An entry of the Service endpoints of a snapshot sent in parts: its text, or an entry a delta took from the base. */
type EntryEntry = { readonly text: string } | { readonly entry: ServiceEndpointsIR };

/** A route of a snapshot being decoded: its text (and the parsed value, when it came parsed), or a route a delta took from the base. */
type RouteEntry = { readonly text: string; readonly value?: unknown } | { readonly route: RouteIR };

/**
 * The skeleton of parts, parsed, with its listeners' (empty) route lists taken out; refused
 * unless it carries no routes of its own and `routeCounts` has one count per listener adding
 * up to `expected` (the routes, or a delta's refs: `what`).
 */
function partsSkeleton(parts: SnapshotParts, expected: number, what: string, subject: string): unknown {
  const routes: unknown[][] = [];
  const skeleton = withoutRoutes(parseJson(parts.skeleton, subject), routes);
  const inSkeleton = routes.reduce((n, list) => n + list.length, 0);
  const counted = parts.routeCounts.reduce((n, c) => n + c, 0);
  // A count that is not a whole number (or below 0) would cut the routes apart wrongly however they add up.
  const odd = parts.routeCounts.findIndex((c) => !Number.isInteger(c) || c < 0);
  if (odd >= 0) throw new ValidationError(subject, [{ path: `routeCounts[${odd}]`, message: `got ${parts.routeCounts[odd]}; a listener's count of ${what} is a whole number, 0 or more` }]);
  if (inSkeleton || routes.length !== parts.routeCounts.length || counted !== expected) {
    throw new ValidationError(subject, [
      { path: 'routeCounts', message: `got ${parts.routeCounts.length} listener counts adding up to ${counted} for ${routes.length} listeners and ${expected} ${what}; expected one count per listener adding up to the ${what} sent` },
    ]);
  }
  return skeleton;
}

function parseJson(text: string, subject: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ValidationError(subject, [{ path: '', message: `not JSON (${(err as Error).message})` }]);
  }
}

/** Routes seen valid, with the bounds (JSON) they were checked under. */
const validRoutes = new WeakMap<RouteIR, string>();
/** Entries of Service endpoints seen valid. */
const validEntries = new WeakSet<ServiceEndpointsIR>();
/** Route lists whose every route was found valid, with the bounds (JSON) they were checked under (a list is never changed once in a snapshot). */
const validLists = new WeakMap<readonly RouteIR[], string>();

/** A snapshot's route lists by listener name, with where each starts in the snapshot's order of routes (routePositions). */
function listsWithOffsets(snapshot: ProxySnapshot): Map<string, { readonly routes: readonly RouteIR[]; readonly at: number }> {
  const out = new Map<string, { readonly routes: readonly RouteIR[]; readonly at: number }>();
  let at = 0;
  for (const b of snapshot.binds) {
    for (const l of b.listeners) {
      out.set(l.name, { routes: l.routes, at });
      at += l.routes.length;
    }
  }
  return out;
}

/** A snapshot's route lists by listener name (names are unique in a snapshot). */
function listsByName(snapshot: ProxySnapshot): Map<string, readonly RouteIR[]> {
  const out = new Map<string, readonly RouteIR[]>();
  for (const b of snapshot.binds) for (const l of b.listeners) out.set(l.name, l.routes);
  return out;
}

/**
 * The builder's check (the controller, before it offers a snapshot): the problems a proxy's
 * decoder would report for this snapshot, none when it would accept it. Only routes not seen
 * valid before are checked (by identity), each through its wire text as a proxy reads it; a
 * route list found valid is not walked again, and one that replaced a valid list of `previous`
 * (the snapshot the same source offered before; by listener name) is walked only between the
 * ends both lists share.
 */
export function snapshotProblems(snapshot: ProxySnapshot, previous?: ProxySnapshot): Problem[] {
  const routes: unknown[][] = [];
  const skeleton = withoutRoutes(JSON.parse(encodeSkeleton(snapshot)), routes);
  const result = validateWire(skeleton);
  if (!result.ok) return result.problems;
  const problems = crossCheck(result.value);
  const limits = snapshot.limits ?? DEFAULT_LIMITS;
  const limitsKey = JSON.stringify(limits);
  const before = previous && listsByName(previous);
  snapshot.binds.forEach((b, bi) =>
    b.listeners.forEach((l, li) => {
      const list = l.routes;
      if (validLists.get(list) === limitsKey) return;
      // A list found valid under these bounds, at this listener of the snapshot before: only
      // the routes between the ends both share are looked at.
      const was = before?.get(l.name);
      const { head, tail } = was !== undefined && validLists.get(was) === limitsKey ? commonEnds(was, list) : { head: 0, tail: 0 };
      let valid = true;
      for (let ri = head; ri < list.length - tail; ri++) {
        const route = list[ri]!;
        if (validRoutes.get(route) === limitsKey) continue;
        const checked = checkWireRoute(JSON.parse(routeText(route)), `binds[${bi}].listeners[${li}].routes[${ri}]`, limits);
        if (checked.ok) validRoutes.set(route, limitsKey);
        else {
          valid = false;
          problems.push(...checked.problems);
        }
      }
      if (valid) validLists.set(list, limitsKey);
    }),
  );
  const names = new Set<string>();
  (snapshot.endpoints ?? []).forEach((e, i) => {
    noteEntryName(names, e.name, i, problems);
    if (validEntries.has(e)) return;
    const checked = validateEntry(JSON.parse(entryText(e)));
    if (checked.ok) validEntries.add(e);
    else problems.push(...checked.problems.map((p) => ({ path: p.path ? `endpoints[${i}].${p.path}` : `endpoints[${i}]`, message: p.message })));
  });
  if (!problems.length && !versioned.has(snapshot) && snapshot.version !== snapshotVersion(snapshot)) {
    problems.push({ path: 'version', message: `got ${JSON.stringify(snapshot.version)}; the content hashes to ${JSON.stringify(snapshotVersion(snapshot))}` });
  }
  return problems;
}

/** The wire JSON of the snapshot without its routes and its Service endpoints (both travel apart in parts). */
function encodeSkeleton(snapshot: ProxySnapshot): string {
  const { endpoints: _, ...rest } = snapshot;
  return JSON.stringify(toWire({ ...rest, binds: snapshot.binds.map((b) => ({ ...b, listeners: b.listeners.map((l) => ({ ...l, routes: [] })) })) }));
}

/**
 * A shallow copy of a parsed snapshot with each listener's routes taken out into `routes` (one
 * list per listener, in order) and replaced by []. Anything not shaped like a snapshot is
 * returned as it is: the schema reports it.
 */
function withoutRoutes(value: unknown, routes: unknown[][]): unknown {
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObj(value) || !Array.isArray(value.binds)) return value;
  return {
    ...value,
    binds: value.binds.map((b: unknown) => {
      if (!isObj(b) || !Array.isArray(b.listeners)) return b;
      return {
        ...b,
        listeners: b.listeners.map((l: unknown) => {
          if (!isObj(l) || !Array.isArray(l.routes)) {
            routes.push([]);
            return l;
          }
          routes.push(l.routes);
          return { ...l, routes: [] };
        }),
      };
    }),
  };
}

/** One route against the route schema and the checks the schema cannot make (its regexes, within `limits`). */
function checkWireRoute(value: unknown, path: string, limits: EvaluationLimits): { ok: true; route: WireRoute } | { ok: false; problems: Problem[] } {
  const at = (p: string) => (p ? (p.startsWith('[') ? `${path}${p}` : `${path}.${p}`) : path);
  const result = validateRoute(value);
  if (!result.ok) return { ok: false, problems: result.problems.map((p) => ({ path: at(p.path), message: p.message })) };
  const route = result.value;
  const problems: Problem[] = [];
  checkRegexes(route.matches, path, limits.regex, problems);
  route.backends.forEach((b, i) => checkBackendProtocol(b, `${path}.backends[${i}]`, problems));
  route.filters.forEach((f, i) => {
    if (f.type === 'RequestMirror') checkBackendProtocol(f.backend, `${path}.filters[${i}].backend`, problems);
  });
  return problems.length ? { ok: false, problems } : { ok: true, route };
}

/** h2c is cleartext and h2 is negotiated in the TLS handshake: each goes with tls one way only. */
function checkBackendProtocol(b: ToWire<BackendIR>, path: string, out: Problem[]): void {
  if (b.kind === 'invalid' || b.protocol === undefined) return;
  if (b.protocol === 'h2c' && b.tls) out.push({ path: `${path}.protocol`, message: 'h2c is HTTP/2 over cleartext and cannot go with tls; use h2 for HTTP/2 over TLS' });
  if (b.protocol === 'h2' && !b.tls) out.push({ path: `${path}.protocol`, message: 'h2 is HTTP/2 over TLS and needs tls; add tls, or use h2c for HTTP/2 over cleartext' });
}

function wrapValue(h: ToWire<HeaderValueIR>): HeaderValueIR {
  const v = h.value;
  return { name: h.name, value: typeof v === 'string' ? v : new Secret(v.secret) };
}

/** A policy's credentials (API key digests, password hashes) back into Secrets: every `{ secret }` object of it. */
function wrapPolicy<T>(p: ToWire<T> | null): T | null {
  const walk = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map(walk);
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1 && keys[0] === 'secret' && typeof o.secret === 'string') return new Secret(o.secret);
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = walk(o[k]);
    return out;
  };
  return p === null ? null : (walk(p) as T);
}

function wrapListener(l: WireListener, policy: PolicyIR | null, routes: readonly RouteIR[]): ListenerIR {
  if (l.protocol === 'HTTP') return { ...l, policy, routes };
  const certificates = l.tls.certificates.map((c) => ({ origin: c.origin, certificate: c.certificate, key: new Secret(c.key.secret) }));
  const clientValidation = l.tls.clientValidation ? { clientValidation: l.tls.clientValidation } : {};
  return { ...l, policy, routes, tls: { mode: l.tls.mode, certificates, ...clientValidation } };
}

function wrapTlsBind(b: ToWire<TlsBindIR>): TlsBindIR {
  return {
    ...b,
    listeners: b.listeners.map((l) => (l.tls.mode === 'Passthrough' ? l : { ...l, tls: { mode: 'Terminate', certificates: l.tls.certificates.map((c) => ({ origin: c.origin, certificate: c.certificate, key: new Secret(c.key.secret) })) } })) as TlsListenerIR[],
  };
}

function wrapRoute(r: WireRoute): RouteIR {
  return { ...r, policy: wrapPolicy<RouteIR['policy']>(r.policy), filters: r.filters.map(wrapFilter), backends: r.backends.map(wrapBackend) };
}

function wrapFilter(f: ToWire<FilterIR>): FilterIR {
  if (f.type === 'RequestMirror') return { ...f, backend: wrapBackend(f.backend) };
  if (f.type !== 'RequestHeaderModifier' && f.type !== 'ResponseHeaderModifier') return f;
  return { ...f, set: f.set.map(wrapValue), add: f.add.map(wrapValue) };
}

function wrapBackend(b: ToWire<BackendIR>): BackendIR {
  if (b.kind === 'invalid') return b;
  const cert = b.tls?.clientCertificate;
  const tls = b.tls && { ...b.tls, clientCertificate: cert ? { ...cert, key: new Secret(cert.key.secret) } : null };
  const provider = b.kind !== 'service' && b.provider ? wrapProvider(b.provider) : undefined;
  if (b.kind === 'static') return { ...b, ...(tls ? { tls } : {}), ...(provider ? { provider } : {}) } as BackendIR;
  const filters = b.filters?.map((f) => wrapFilter(f) as BackendFilterIR);
  return { ...b, ...(filters ? { filters } : {}), ...(tls ? { tls } : {}), ...(provider ? { provider } : {}) } as BackendIR;
}

function wrapProvider(p: ToWire<ProviderIR>): ProviderIR {
  return { ...p, apiKey: p.apiKey && { origin: p.apiKey.origin, value: new Secret(p.apiKey.value.secret) } };
}

/** Records the name of the i-th entry of the Service endpoints in `names`; one already there is a problem (the proxy keys the entries by name). */
function noteEntryName(names: Set<string>, name: string, i: number, problems: Problem[]): void {
  if (names.has(name)) problems.push({ path: `endpoints[${i}].name`, message: `Service port ${JSON.stringify(name)} is listed twice; one entry per name` });
  names.add(name);
}

// What the schema cannot say: the proxy keys binds by port, listeners by name and Service
// endpoints by name (the routes' own checks are in checkWireRoute).
function crossCheck(wire: WireSnapshot): Problem[] {
  const out: Problem[] = [];
  const services = new Set<string>();
  (wire.endpoints ?? []).forEach((e, i) => noteEntryName(services, e.name, i, out));
  const ports = new Set<number>();
  const listeners = new Set<string>();
  (wire.tlsBinds ?? []).forEach((b, bi) => {
    if (ports.has(b.port)) out.push({ path: `tlsBinds[${bi}].port`, message: `port ${b.port} is bound twice; one bind per port` });
    ports.add(b.port);
    const hosts = new Set<string>();
    b.listeners.forEach((l, li) => {
      const path = `tlsBinds[${bi}].listeners[${li}]`;
      if (listeners.has(l.name)) out.push({ path: `${path}.name`, message: `listener name ${JSON.stringify(l.name)} is used twice` });
      listeners.add(l.name);
      const host = l.hostname ?? '*';
      if (hosts.has(host)) out.push({ path: `${path}.hostname`, message: `two listeners on port ${b.port} have hostname ${JSON.stringify(host)}` });
      hosts.add(host);
    });
  });
  wire.binds.forEach((b, bi) => {
    if (ports.has(b.port)) out.push({ path: `binds[${bi}].port`, message: `port ${b.port} is bound twice; one bind per port` });
    ports.add(b.port);
    const hosts = new Set<string>();
    const protocol = b.listeners[0]?.protocol;
    b.listeners.forEach((l, li) => {
      const path = `binds[${bi}].listeners[${li}]`;
      if (l.protocol !== protocol) {
        out.push({ path: `${path}.protocol`, message: `got ${l.protocol}; every listener on port ${b.port} must be ${protocol} (one port is one plain or one TLS socket)` });
      }
      if (listeners.has(l.name)) out.push({ path: `${path}.name`, message: `listener name ${JSON.stringify(l.name)} is used twice` });
      listeners.add(l.name);
      const host = l.hostname ?? '*';
      if (hosts.has(host)) out.push({ path: `${path}.hostname`, message: `two listeners on port ${b.port} have hostname ${JSON.stringify(host)}` });
      hosts.add(host);
    });
  });
  return out;
}

// Snapshots whose version withVersion() computed: snapshotProblems() need not hash them again
// (a snapshot is never changed after it is made).
const versioned = new WeakSet<ProxySnapshot>();

/**
 * The snapshot with its version computed from its content; `previous`, a snapshot the same
 * source sent before, only saves work (see snapshotVersion).
 */
export function withVersion(content: Omit<ProxySnapshot, 'version'>, previous?: ProxySnapshot): ProxySnapshot {
  const snapshot = {
    version: snapshotVersion(content, previous),
    source: content.source,
    binds: content.binds,
    ...(content.tlsBinds?.length ? { tlsBinds: content.tlsBinds } : {}),
    ...(content.limits ? { limits: content.limits } : {}),
    ...(content.endpoints?.length ? { endpoints: content.endpoints } : {}),
  };
  versioned.add(snapshot);
  return snapshot;
}
