// Sending a ProxySnapshot: the wire encoding, the validator on the receiving side, and the
// content version.
//
// In memory a credential is a Secret, which serialises as "[redacted]" so that a config
// dump, a trace or a log line cannot leak it. The snapshot stream must carry the value, so
// toWire() reveals it into `{ "secret": "..." }` and fromWire() wraps it again; nothing else
// reveals. JSON.stringify(snapshot) keeps redacting.
import { createHash } from 'node:crypto';
import { compile } from './ajv.js';
import { compileRouteRegex } from './regex.js';
import { Secret } from './secret.js';
import { WireSnapshot, type ToWire } from './snapshot-schema.js';
import type { BackendIR, FilterIR, HeaderValueIR, ListenerIR, ListenerTlsIR, ProxySnapshot, RouteIR } from './snapshot.js';
import { ValidationError, type Problem } from './validation-error.js';

const validateWire = compile(WireSnapshot);

/** A deep copy in plain JSON values, every Secret revealed as `{ secret }`. */
export function toWire(snapshot: ProxySnapshot): WireSnapshot {
  return reveal(snapshot) as WireSnapshot;
}

function reveal(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Secret) return { secret: value.reveal() };
  if (Array.isArray(value)) return value.map(reveal);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = reveal(v);
  }
  return out;
}

/** The snapshot as the stream sends it: JSON text with secrets in clear. */
export function encodeSnapshot(snapshot: ProxySnapshot): string {
  return JSON.stringify(toWire(snapshot));
}

/**
 * Validates a received snapshot (parsed JSON) and returns the in-memory IR. Throws a
 * ValidationError naming every bad field; a snapshot whose version is not the hash of its
 * content is refused too (it was altered or built by a different encoder).
 */
export function fromWire(value: unknown, subject = 'snapshot'): ProxySnapshot {
  const result = validateWire(value);
  if (!result.ok) throw new ValidationError(subject, result.problems);
  const wire = result.value;
  const problems = crossCheck(wire);
  const snapshot: ProxySnapshot = {
    ...wire,
    binds: wire.binds.map((b) => ({
      ...b,
      listeners: b.listeners.map(wrapListener),
    })),
  };
  const expected = snapshotVersion(snapshot);
  if (expected !== wire.version) {
    problems.push({ path: 'version', message: `got ${JSON.stringify(wire.version)}; the content hashes to ${JSON.stringify(expected)}` });
  }
  if (problems.length) throw new ValidationError(subject, problems);
  return snapshot;
}

/** Parses and validates the text encodeSnapshot() produced. */
export function decodeSnapshot(text: string, subject = 'snapshot'): ProxySnapshot {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ValidationError(subject, [{ path: '', message: `not JSON (${(err as Error).message})` }]);
  }
  return fromWire(value, subject);
}

function wrapValue(h: ToWire<HeaderValueIR>): HeaderValueIR {
  const v = h.value;
  return { name: h.name, value: typeof v === 'string' ? v : new Secret(v.secret) };
}

function wrapListener(l: ToWire<ListenerIR>): ListenerIR {
  const routes = l.routes.map((r) => ({ ...r, filters: r.filters.map(wrapFilter), backends: r.backends.map(wrapBackend) }));
  if (l.protocol === 'HTTP') return { ...l, routes };
  const certificates = l.tls.certificates.map((c) => ({ origin: c.origin, certificate: c.certificate, key: new Secret(c.key.secret) }));
  return { ...l, routes, tls: { mode: l.tls.mode, certificates } };
}

function wrapFilter(f: ToWire<FilterIR>): FilterIR {
  if (f.type !== 'RequestHeaderModifier' && f.type !== 'ResponseHeaderModifier') return f;
  return { ...f, set: f.set.map(wrapValue), add: f.add.map(wrapValue) };
}

function wrapBackend(b: ToWire<BackendIR>): BackendIR {
  if (b.kind !== 'service' || !b.filters) return b as BackendIR;
  return { ...b, filters: b.filters.map((f) => ({ ...f, set: f.set.map(wrapValue), add: f.add.map(wrapValue) })) };
}

// What the schema cannot say: the proxy keys binds by port and listeners by name.
function crossCheck(wire: WireSnapshot): Problem[] {
  const out: Problem[] = [];
  const ports = new Set<number>();
  const listeners = new Set<string>();
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
      l.routes.forEach((r, ri) =>
        r.matches.forEach((m, mi) => {
          const mp = `${path}.routes[${ri}].matches[${mi}]`;
          const check = (source: string, at: string) => {
            const re = compileRouteRegex(source);
            if (!re.ok) out.push({ path: at, message: `got ${JSON.stringify(source)}: ${re.problem}` });
          };
          if (m.path.type === 'RegularExpression') check(m.path.value, `${mp}.path.value`);
          m.headers.forEach((h, i) => h.type === 'RegularExpression' && check(h.value, `${mp}.headers[${i}].value`));
          m.queryParams.forEach((q, i) => q.type === 'RegularExpression' && check(q.value, `${mp}.queryParams[${i}].value`));
        }),
      );
    });
  });
  return out;
}

/**
 * The version of a snapshot: a hash of everything but the version itself (secrets included,
 * so a rotated credential is a new version). Equal content, equal version, so a controller
 * can skip pushing what a proxy already has.
 *
 * Routes are hashed one by one and the snapshot hash covers their digests: a route object is
 * immutable, so its digest is kept (by identity) and a builder that reuses the route objects
 * of unchanged routes pays only for the routes that changed. A route's digest covers its JSON
 * text, which follows the order of its keys: the IR builders always write them in one order,
 * and fromWire keeps the order a snapshot was sent in.
 */
export function snapshotVersion(snapshot: Omit<ProxySnapshot, 'version'> | ProxySnapshot): string {
  const skeleton = {
    source: snapshot.source,
    binds: snapshot.binds.map((b) => ({
      port: b.port,
      address: b.address,
      listeners: b.listeners.map((l) => ({
        name: l.name,
        protocol: l.protocol,
        hostname: l.hostname,
        ...(l.protocol === 'HTTPS' ? { tls: tlsDigest(l.tls) } : {}),
        policy: l.policy,
        routes: l.routes.map(routeDigest),
      })),
    })),
  };
  return createHash('sha256').update(JSON.stringify(skeleton)).digest('hex').slice(0, 12);
}

// Covers the keys too: a rotated key with the same certificate is a new version.
function tlsDigest(tls: ListenerTlsIR): string {
  const h = createHash('sha256').update(tls.mode);
  for (const c of tls.certificates) h.update('\n').update(JSON.stringify(c.origin)).update('\n').update(c.certificate).update('\n').update(c.key.reveal());
  return h.digest('base64');
}

const routeDigests = new WeakMap<RouteIR, string>();

// The JSON text has each Secret redacted in place; their values follow it, in order.
function routeDigest(route: RouteIR): string {
  let digest = routeDigests.get(route);
  if (digest === undefined) {
    digest = createHash('sha256').update(JSON.stringify(route)).update('\n').update(JSON.stringify(secretValues(route))).digest('base64');
    routeDigests.set(route, digest);
  }
  return digest;
}

/** Every Secret of a route, revealed, in document order (they live in header filters only). */
function secretValues(route: RouteIR): string[] {
  const out: string[] = [];
  for (const f of route.filters) {
    if (f.type !== 'RequestHeaderModifier' && f.type !== 'ResponseHeaderModifier') continue;
    for (const h of f.set) if (h.value instanceof Secret) out.push(h.value.reveal());
    for (const h of f.add) if (h.value instanceof Secret) out.push(h.value.reveal());
  }
  return out;
}

/** The snapshot with its version computed from its content. */
export function withVersion(content: Omit<ProxySnapshot, 'version'>): ProxySnapshot {
  return { version: snapshotVersion(content), source: content.source, binds: content.binds };
}
