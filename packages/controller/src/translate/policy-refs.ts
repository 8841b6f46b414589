// What a GatewayPolicy's authentication kinds name in the cluster, and the one rule of what it
// may read. The reference fields are found by the names the schema gives them (api
// auth/refs.ts, the same names auth/check.ts refuses in a standalone config): `secretRefs`
// (Secrets), `secretSelector` (Secrets of the policy's namespace by label), `secretRef`, `ref`
// and `caCertificateRef` (a key of a Secret or ConfigMap), `backendRef` (a Service), so a kind
// added later with these fields is covered as it is.
//
// references.ts (which objects the controller reads whole) and the policy's sources in
// translation (policy-sources.ts: what a conversion may read) both decide with these
// functions: a conversion can never need an object the cache did not read, and the cache
// reads nothing a policy may not use.
import { AUTH_KINDS, joinPath, MAX_SELECTABLE_LABEL_BYTES, MAX_SELECTED_SECRETS } from '@tollgate/api';
import { POLICY_GROUP, type GatewayPolicy } from '../types/gateway-api.js';
import { compareStrings } from './keys.js';
import type { OutboundField } from './outbound.js';
import type { ReferenceFrom, ReferenceGrants } from './referencegrant.js';

export type PolicyObjectKind = 'Secret' | 'ConfigMap';

/** A Secret or ConfigMap a policy names, at the JSON path of the reference. */
export interface ObjectRefAt {
  readonly at: string;
  readonly kind: PolicyObjectKind;
  readonly namespace: string;
  readonly name: string;
  /** The data key the reference names; null when it names none (the kind's default applies). */
  readonly key: string | null;
}

/** A label selector of Secrets in the policy's namespace. */
export interface SelectorAt {
  readonly at: string;
  readonly matchLabels: Readonly<Record<string, string>>;
}

/** An object naming an outbound target (`backendRef`), at its JSON path. */
export interface OutboundAt {
  readonly at: string;
  readonly field: OutboundField;
}

export interface PolicyRefs {
  readonly objects: readonly ObjectRefAt[];
  readonly selectors: readonly SelectorAt[];
  readonly outbound: readonly OutboundAt[];
}


/** The CRD bounds nesting far below this; it keeps a walk of a hand-made object short. */
const MAX_DEPTH = 12;

const OBJECT_KEY_FIELDS = new Set(['secretRef', 'ref', 'caCertificateRef']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isName = (v: unknown): v is string => typeof v === 'string' && v !== '';

const found = new WeakMap<GatewayPolicy, PolicyRefs>();

/** Every reference of the policy's authentication kinds (`spec.traffic.<kind>`), in field order. */
export function policyRefs(p: GatewayPolicy): PolicyRefs {
  const hit = found.get(p);
  if (hit) return hit;
  const ns = p.metadata.namespace ?? '';
  const objects: ObjectRefAt[] = [];
  const selectors: SelectorAt[] = [];
  const outbound: OutboundAt[] = [];
  const walk = (value: unknown, path: string, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, joinPath(path, i), depth + 1));
      return;
    }
    if (!isObject(value)) return;
    for (const [field, v] of Object.entries(value)) {
      const at = joinPath(path, field);
      if (field === 'secretRefs' && Array.isArray(v)) {
        v.forEach((r, i) => {
          if (isObject(r) && isName(r.name)) objects.push({ at: joinPath(at, i), kind: 'Secret', namespace: isName(r.namespace) ? r.namespace : ns, name: r.name, key: null });
        });
      } else if (field === 'secretSelector') {
        if (isObject(v) && isObject(v.matchLabels)) selectors.push({ at, matchLabels: stringEntries(v.matchLabels) });
      } else if (OBJECT_KEY_FIELDS.has(field)) {
        if (isObject(v) && isName(v.name))
          objects.push({ at, kind: v.kind === 'ConfigMap' ? 'ConfigMap' : 'Secret', namespace: isName(v.namespace) ? v.namespace : ns, name: v.name, key: isName(v.key) ? v.key : null });
      } else if (field === 'backendRef') {
        if (isObject(v)) outbound.push({ at: path, field: value });
      } else if (field !== 'matchLabels') {
        walk(v, at, depth + 1);
      }
    }
  };
  const traffic = p.spec.traffic as Record<string, unknown> | undefined;
  for (const kind of AUTH_KINDS) if (traffic?.[kind] !== undefined) walk(traffic[kind], `spec.traffic.${kind}`, 0);
  const refs = { objects, selectors, outbound };
  found.set(p, refs);
  return refs;
}

function stringEntries(o: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

export const policyReferrer = (namespace: string): ReferenceFrom => ({ group: POLICY_GROUP, kind: 'GatewayPolicy', namespace });

/** Whether a policy of `policyNamespace` may read the object: its own namespace, or a ReferenceGrant there. */
export function mayRead(policyNamespace: string, ref: { readonly kind: PolicyObjectKind; readonly namespace: string; readonly name: string }, grants: ReferenceGrants): boolean {
  return grants.permits(policyReferrer(policyNamespace), { group: '', kind: ref.kind, namespace: ref.namespace, name: ref.name });
}

/**
 * The labels a selector may match: all of them, or none when together they exceed
 * MAX_SELECTABLE_LABEL_BYTES (the schema's bound). The metadata cache keeps no more
 * (watch/metadata-watch.ts), so such a Secret is chosen by no selector, in the cache and in
 * translation alike.
 */
export function selectableLabels(labels: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | undefined {
  if (!labels) return undefined;
  let bytes = 0;
  for (const [k, v] of Object.entries(labels)) {
    bytes += k.length + (typeof v === 'string' ? v.length : 0);
    if (bytes > MAX_SELECTABLE_LABEL_BYTES) return undefined;
  }
  return labels;
}

/** Whether an object with `labels` is chosen by matchLabels (an empty one chooses nothing: the CRD requires one label). */
export function matchesSelector(matchLabels: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>> | undefined): boolean {
  const entries = Object.entries(matchLabels);
  if (!entries.length) return false;
  const have = selectableLabels(labels) ?? {};
  return entries.every(([k, v]) => Object.prototype.hasOwnProperty.call(have, k) && have[k] === v);
}

export interface Labelled {
  readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
}

/**
 * The Secrets of one namespace a selector chooses, by name, at most MAX_SELECTED_SECRETS + 1
 * (`more`: the selector chooses too many, and the policy is refused for it).
 */
export function selectSecrets<T extends Labelled>(matchLabels: Readonly<Record<string, string>>, candidates: Iterable<T>): { readonly selected: readonly T[]; readonly more: boolean } {
  const chosen: T[] = [];
  for (const c of candidates) if (matchesSelector(matchLabels, c.metadata?.labels)) chosen.push(c);
  chosen.sort((a, b) => compareStrings(a.metadata?.name ?? '', b.metadata?.name ?? ''));
  const more = chosen.length > MAX_SELECTED_SECRETS;
  return { selected: more ? chosen.slice(0, MAX_SELECTED_SECRETS + 1) : chosen, more };
}
