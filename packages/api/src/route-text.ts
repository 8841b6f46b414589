// A route's wire text (its JSON with secrets in clear), kept by route object: a route object
// is immutable, so it is serialised once however many snapshots, encodings and version hashes
// it takes part in.
import { Secret } from './secret.js';
import type { RouteIR, ServiceEndpointsIR } from './snapshot.js';

/** A deep copy in plain JSON values, every Secret revealed as `{ secret }`. */
export function reveal(value: unknown): unknown {
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

const routeTexts = new WeakMap<RouteIR, string>();

/** A route's wire JSON (secrets in clear), kept by identity. */
export function routeText(route: RouteIR): string {
  let text = routeTexts.get(route);
  if (text === undefined) {
    text = JSON.stringify(reveal(route));
    routeTexts.set(route, text);
  }
  return text;
}

const policyTexts = new WeakMap<object, string>();

/** A listener policy's wire JSON (secrets in clear; `null` for none), kept by identity as a route's. */
export function policyText(policy: object | null): string {
  if (policy === null) return 'null';
  let text = policyTexts.get(policy);
  if (text === undefined) {
    text = JSON.stringify(reveal(policy));
    policyTexts.set(policy, text);
  }
  return text;
}

/** Records the text a received route was decoded from: its digest hashes it without writing it again. */
export function keepRouteText(route: RouteIR, text: string): void {
  routeTexts.set(route, text);
}

const entryTexts = new WeakMap<ServiceEndpointsIR, string>();

/** The JSON text of an entry of a snapshot's Service endpoints, kept by identity as a route's. */
export function entryText(entry: ServiceEndpointsIR): string {
  let text = entryTexts.get(entry);
  if (text === undefined) entryTexts.set(entry, (text = JSON.stringify(entry)));
  return text;
}

/** Records the text a received entry was decoded from. */
export function keepEntryText(entry: ServiceEndpointsIR, text: string): void {
  entryTexts.set(entry, text);
}
