// The PolicySources of a GatewayPolicy (api auth/sources.ts): what its authentication kinds'
// conversions read in a cluster. A key of a Secret or ConfigMap, Secrets by name or by label
// (the policy's namespace only), in the policy's namespace or another whose ReferenceGrant
// allows GatewayPolicies of the policy's namespace; outbound targets through resolveOutbound
// (./outbound.ts), so their readiness shows in ServicesAvailable like the rate limit service's.
//
// Only objects the policy's reference fields name (./policy-refs.ts) can be read, the same
// ones the cache reads whole (./references.ts): what the cache did not read, translation never
// asks for. A failure is the policy's Accepted reason: RefNotPermitted (no grant),
// InvalidSecretRef or InvalidConfigMapRef (missing object or key, not UTF-8, too large); a
// problem a conversion finds in what it read (a bad key, an htpasswd line) takes the reason of
// the reference it read it from. No message quotes a value: objects and keys are named by
// their names, sizes are counted.
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { joinPath, MAX_SELECTED_SECRETS, type ObjectKeyRef, type OutboundRef, type PolicySources, type Problem, type SourceObject, type SourceResult } from '@tollgate/api';
import type { Context } from './context.js';
import { resolveOutbound, type OutboundField } from './outbound.js';
import { authOutbound, type PolicyOutbound } from './policy-outbound.js';
import { mayRead, policyReferrer, selectSecrets, type PolicyObjectKind, type PolicyRefs } from './policy-refs.js';
import { grantNeeded } from './referencegrant.js';

/** Largest text one reference yields (the API server keeps an object's data below about 1 MiB anyway). */
export const MAX_REFERENCED_TEXT_BYTES = 1024 * 1024;
/** Most data (decoded) of the Secrets one secretRefs/secretSelector pair yields. */
export const MAX_SELECTED_DATA_BYTES = 16 * 1024 * 1024;

export type SourceReason = 'Invalid' | 'RefNotPermitted' | 'InvalidSecretRef' | 'InvalidConfigMapRef';

/** A problem and the Accepted reason it gives the policy. */
export interface Finding {
  readonly problem: Problem;
  readonly reason: SourceReason;
}

type Failure = { readonly ok: false; readonly reason: SourceReason; readonly problem: Problem };
type Found = { readonly ok: true; readonly object: V1Secret | V1ConfigMap } | Failure;

const failure = (reason: SourceReason, path: string, message: string): Failure => ({ ok: false, reason, problem: { path, message } });

export const objectReason = (kind: PolicyObjectKind): SourceReason => (kind === 'Secret' ? 'InvalidSecretRef' : 'InvalidConfigMapRef');

function objectOf(ctx: Context, kind: PolicyObjectKind, namespace: string, name: string): V1Secret | V1ConfigMap | undefined {
  return kind === 'Secret' ? ctx.secrets.get(`${namespace}/${name}`) : ctx.configMaps.get(`${namespace}/${name}`);
}

/** Data keys of an object, sorted (names only: they are no secret). */
function dataKeys(o: V1Secret | V1ConfigMap): string[] {
  return [...new Set([...Object.keys(o.data ?? {}), ...Object.keys((o as V1ConfigMap).binaryData ?? {})])].sort();
}

function listKeys(keys: readonly string[]): string {
  if (!keys.length) return 'it has no data';
  const shown = keys.slice(0, 16).map((k) => `"${k}"`);
  return `its keys: ${shown.join(', ')}${keys.length > shown.length ? ` and ${keys.length - shown.length} more` : ''}`;
}

interface ObjectRef {
  readonly at: string;
  readonly kind: PolicyObjectKind;
  readonly namespace: string;
  readonly name: string;
  readonly key: string | null;
}

/**
 * The object a reference of a policy of `policyNamespace` names, or why the policy cannot
 * have it: not permitted, missing, or without the key the reference names. The one check of
 * every reference, whether a conversion reads it or not.
 */
export function lookupObject(policyNamespace: string, ref: ObjectRef, ctx: Context): Found {
  const what = `${ref.kind} ${ref.namespace}/${ref.name}`;
  if (!mayRead(policyNamespace, ref, ctx.grants)) return failure('RefNotPermitted', ref.at, grantNeeded(what, ref.namespace, policyReferrer(policyNamespace)));
  const object = objectOf(ctx, ref.kind, ref.namespace, ref.name);
  if (!object) return failure(objectReason(ref.kind), ref.at, `${what} does not exist; create it or fix the name`);
  if (ref.key !== null && !dataKeys(object).includes(ref.key)) return failure(objectReason(ref.kind), joinPath(ref.at, 'key'), `${what} has no key "${ref.key}" (${listKeys(dataKeys(object))})`);
  return { ok: true, object };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes of one data key: a Secret's (base64), a ConfigMap's data (text) or binaryData (base64). */
function rawValue(o: V1Secret | V1ConfigMap, kind: PolicyObjectKind, key: string): Buffer | undefined {
  if (kind === 'ConfigMap') {
    const text = o.data?.[key];
    if (text !== undefined) return Buffer.from(text, 'utf8');
  }
  const b64 = kind === 'Secret' ? o.data?.[key] : (o as V1ConfigMap).binaryData?.[key];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64');
}

/** UTF-8 text (a byte-order mark dropped), or why not. */
function decode(bytes: Buffer, what: string, key: string, path: string, reason: SourceReason): { ok: true; text: string } | Failure {
  if (bytes.length > MAX_REFERENCED_TEXT_BYTES) return failure(reason, path, `${what} key "${key}" holds ${bytes.length} bytes, more than the ${MAX_REFERENCED_TEXT_BYTES} a reference may read`);
  try {
    return { ok: true, text: utf8.decode(bytes) };
  } catch {
    return failure(reason, path, `${what} key "${key}" is not UTF-8 text`);
  }
}

/** The references of a policy, checked: every failure, each as a finding naming its field. */
export function checkReferences(policyNamespace: string, refs: PolicyRefs, ctx: Context): Finding[] {
  const out: Finding[] = [];
  for (const r of refs.objects) {
    const found = lookupObject(policyNamespace, r, ctx);
    if (!found.ok) out.push(found);
  }
  for (const s of refs.selectors) {
    if (selectSecrets(s.matchLabels, ctx.secretsIn(policyNamespace)).more) out.push(tooMany(s.at, policyNamespace));
  }
  for (const o of refs.outbound) {
    const r = resolveOutbound(o.field, o.at, policyReferrer(policyNamespace), ctx);
    if (!r.ok) out.push(r);
  }
  return out;
}

const tooMany = (at: string, namespace: string): Failure =>
  failure('InvalidSecretRef', at, `chooses more than ${MAX_SELECTED_SECRETS} Secrets of ${namespace}, the most one selector may choose; give them a narrower label, or split them between policies`);

const sameLabels = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
};

/** An outbound target a conversion asked for, as asked (replayed to check a cached conversion). */
export interface OutboundCall {
  readonly at: string;
  readonly ref: OutboundField;
  readonly role: string;
  readonly failureMode: 'FailOpen' | 'FailClosed';
  /** What it resolved to: the address, or the refusal's message. */
  readonly answer: string;
}

/** The sources of one policy in one translation; it remembers what it answered, for the status reasons and the conversion cache. */
export class ClusterPolicySources implements PolicySources {
  readonly mode = 'cluster' as const;
  /** The outbound targets resolved, for ServicesAvailable. */
  readonly resolved: PolicyOutbound[] = [];
  readonly outboundCalls: OutboundCall[] = [];
  /** Each read: where, and the reason of a problem found in what it read. */
  readonly #reads: { readonly at: string; readonly reason: SourceReason }[] = [];
  readonly #failures = new Map<Problem, SourceReason>();

  constructor(
    private readonly namespace: string,
    private readonly refs: PolicyRefs,
    private readonly ctx: Context,
  ) {}

  text(at: string, ref: { readonly file: string } | ObjectKeyRef): SourceResult<{ readonly origin: string; readonly text: string }> {
    if ('file' in ref) return this.#fail(at, failure('Invalid', joinPath(at, 'file'), 'a GatewayPolicy cannot read files of the proxy; use a Secret or ConfigMap reference'));
    const kind = ref.kind ?? 'Secret';
    const namespace = ref.namespace ?? this.namespace;
    const what = `${kind} ${namespace}/${ref.name}`;
    const unnamed = this.#unnamed(at, kind, namespace, ref.name);
    if (unnamed) return this.#fail(at, unnamed);
    const found = lookupObject(this.namespace, { at, kind, namespace, name: ref.name, key: ref.key ?? null }, this.ctx);
    if (!found.ok) return this.#fail(at, found);
    const reason = objectReason(kind);
    const keys = dataKeys(found.object);
    const key = ref.key ?? (keys.length === 1 ? keys[0] : undefined);
    if (key === undefined) return this.#fail(at, failure(reason, joinPath(at, 'key'), `names no key and ${what} has ${keys.length ? 'several' : 'none'} (${listKeys(keys)}); set key`));
    const decoded = decode(rawValue(found.object, kind, key) ?? Buffer.alloc(0), what, key, at, reason);
    if (!decoded.ok) return this.#fail(at, decoded);
    this.#reads.push({ at, reason });
    return { ok: true, value: { origin: `${what} key ${key}`, text: decoded.text } };
  }

  secrets(at: string, refs: readonly { readonly name: string; readonly namespace?: string }[], selector: Readonly<Record<string, string>> | null): SourceResult<readonly SourceObject[]> {
    // Problems name the reference field where the policy wrote it (the walk of ./policy-refs.ts
    // found it), whatever path the conversion passes as `at`.
    const chosen = new Map<string, { secret: V1Secret; path: string }>();
    for (const [i, r] of refs.entries()) {
      const namespace = r.namespace ?? this.namespace;
      const path = this.refs.objects.find((o) => o.kind === 'Secret' && o.namespace === namespace && o.name === r.name)?.at ?? joinPath(at, i);
      const unnamed = this.#unnamed(path, 'Secret', namespace, r.name);
      if (unnamed) return this.#fail(at, unnamed);
      const found = lookupObject(this.namespace, { at: path, kind: 'Secret', namespace, name: r.name, key: null }, this.ctx);
      if (!found.ok) return this.#fail(at, found);
      chosen.set(`${namespace}/${r.name}`, { secret: found.object, path });
    }
    if (selector) {
      const held = this.refs.selectors.find((s) => sameLabels(s.matchLabels, selector));
      if (!held) return this.#fail(at, failure('Invalid', at, 'is not a secretSelector of the policy; the controller reads only what the policy\'s reference fields name'));
      const path = held.at;
      const { selected, more } = selectSecrets(selector, this.ctx.secretsIn(this.namespace));
      if (more) return this.#fail(at, tooMany(path, this.namespace));
      for (const s of selected) chosen.set(`${this.namespace}/${s.metadata?.name ?? ''}`, { secret: s, path });
    }
    const out: SourceObject[] = [];
    let total = 0;
    for (const [key, { secret, path }] of chosen) {
      const what = `Secret ${key}`;
      const data: Record<string, string> = {};
      for (const k of dataKeys(secret)) {
        const bytes = rawValue(secret, 'Secret', k) ?? Buffer.alloc(0);
        total += bytes.length;
        if (total > MAX_SELECTED_DATA_BYTES) return this.#fail(at, failure('InvalidSecretRef', path, `the Secrets chosen hold more than ${MAX_SELECTED_DATA_BYTES} bytes of data together (at ${what}), the most one policy's secretRefs and secretSelector may read`));
        const decoded = decode(bytes, what, k, path, 'InvalidSecretRef');
        if (!decoded.ok) return this.#fail(at, decoded);
        data[k] = decoded.text;
      }
      out.push({ origin: what, name: secret.metadata?.name ?? '', data });
    }
    this.#reads.push({ at, reason: 'InvalidSecretRef' });
    return { ok: true, value: out };
  }

  outbound(at: string, ref: OutboundRef, role: string, failureMode: 'FailOpen' | 'FailClosed'): SourceResult<string> {
    const r = resolveOutbound(ref, at, policyReferrer(this.namespace), this.ctx);
    this.outboundCalls.push({ at, ref, role, failureMode, answer: r.ok ? r.target.address : r.problem.message });
    if (!r.ok) return this.#fail(at, r);
    this.resolved.push(authOutbound(role, r.target, failureMode));
    return { ok: true, value: r.target.address };
  }

  /** The Accepted reason of a problem the conversion reported. */
  reasonOf(problem: Problem): SourceReason {
    const failed = this.#failures.get(problem);
    if (failed) return failed;
    // A problem found in what a read returned (or a failure the conversion restated) is the
    // reference's: the read at the longest path that contains it.
    let best: { at: string; reason: SourceReason } | undefined;
    for (const r of this.#reads) if (within(problem.path, r.at) && (!best || r.at.length > best.at.length)) best = r;
    return best?.reason ?? 'Invalid';
  }

  /** Why the object is not one the policy names (a conversion asking for more than the fields say), or null. */
  #unnamed(at: string, kind: PolicyObjectKind, namespace: string, name: string): Failure | null {
    if (this.refs.objects.some((o) => o.kind === kind && o.namespace === namespace && o.name === name)) return null;
    return failure('Invalid', at, `${kind} ${namespace}/${name} is not named by a reference field of the policy; the controller reads only what secretRefs, secretSelector, secretRef, ref and caCertificateRef name`);
  }

  #fail(at: string, f: Failure): Failure {
    this.#failures.set(f.problem, f.reason);
    this.#reads.push({ at, reason: f.reason });
    return f;
  }
}

/** Whether `path` is `base` or lies under it. */
function within(path: string, base: string): boolean {
  return path === base || (path.startsWith(base) && (path[base.length] === '.' || path[base.length] === '['));
}

/** The reason of a policy refused for `findings`: Invalid when the policy itself is wrong; otherwise the first broken reference's, RefNotPermitted only when that is the whole story. */
export function refusalReason(findings: readonly Finding[]): SourceReason {
  if (findings.some((f) => f.reason === 'Invalid')) return 'Invalid';
  return findings.find((f) => f.reason !== 'RefNotPermitted')?.reason ?? 'RefNotPermitted';
}
