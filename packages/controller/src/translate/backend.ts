// Backend resources (tollgate.dev/v1alpha1): each checked once per translation into what an
// HTTPRoute backendRef to it becomes (an `external` backend: a host name the proxies resolve,
// its TLS and its provider, the provider key read from a Secret) and its Accepted condition.
// The objects it reads are the Secret of its provider key and the ConfigMaps of its CA
// certificates: its own namespace, or another whose ReferenceGrant allows Backends of its
// namespace. A changed Secret is a new snapshot, so a rotated key is used for the next request
// without a restart. No message quotes a key.
import { X509Certificate } from 'node:crypto';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { backendTlsIR, DEFAULT_API_KEY_DATA_KEY, toProviderIR, type BackendTLSIR, type ExternalBackendIR, type ObjectKeyRef, type PolicySources, type Problem, type SourceResult } from '@tollgate/api';
import { condition, fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import { generationOf } from './keys.js';
import { grantNeeded, type ReferenceFrom } from './referencegrant.js';
import type { BackendStatusReport } from './types.js';
import { BACKEND_GROUP, type TollgateBackend } from '../types/gateway-api.js';
import { sameObjects } from './same-objects.js';

export { BACKEND_GROUP };

/** What a backendRef to an accepted Backend becomes, but for its weight and filters. */
export type BackendTarget = Omit<ExternalBackendIR, 'weight' | 'filters'>;

export interface BackendState {
  readonly accepted: Verdict;
  /** null while it is not accepted. */
  readonly target: BackendTarget | null;
}

/** Largest CA bundle one Backend reads (all its ConfigMaps together). */
export const MAX_CA_BUNDLE_BYTES = 1024 * 1024;

const backendFrom = (namespace: string): ReferenceFrom => ({ group: BACKEND_GROUP, kind: 'Backend', namespace });

/** The objects a Backend reads, by kind, as `<namespace>/<name>` (what the cache reads whole). */
export function backendReferences(b: TollgateBackend): { readonly secrets: string[]; readonly configMaps: string[] } {
  const ns = b.metadata.namespace ?? '';
  const ref = b.spec.provider?.apiKeySecretRef;
  return {
    secrets: ref ? [`${ref.namespace ?? ns}/${ref.name}`] : [],
    configMaps: (b.spec.tls?.caCertificateRefs ?? []).map((c) => `${ns}/${c.name}`),
  };
}

type Reason = 'Invalid' | 'InvalidSecretRef' | 'InvalidConfigMapRef' | 'RefNotPermitted';

/** The provider key's Secret, read as PolicySources would (the conversion of @tollgate/api asks through it). */
class BackendSources implements PolicySources {
  readonly mode = 'cluster' as const;
  reason: Reason = 'Invalid';
  constructor(
    private readonly namespace: string,
    private readonly ctx: Context,
  ) {}

  text(at: string, ref: { readonly file: string } | ObjectKeyRef): SourceResult<{ readonly origin: string; readonly text: string }> {
    const refused = (reason: Reason, path: string, message: string) => {
      this.reason = reason;
      return { ok: false as const, reason, problem: { path, message } };
    };
    if ('file' in ref) return refused('Invalid', at, 'a Backend names a Secret, not a file');
    const namespace = ref.namespace ?? this.namespace;
    const what = `Secret ${namespace}/${ref.name}`;
    if (!this.ctx.grants.permits(backendFrom(this.namespace), { group: '', kind: 'Secret', namespace, name: ref.name }))
      return refused('RefNotPermitted', at, grantNeeded(what, namespace, backendFrom(this.namespace)));
    const secret = this.ctx.secrets.get(`${namespace}/${ref.name}`);
    if (!secret) return refused('InvalidSecretRef', at, `${what} does not exist; create it or fix the name`);
    const key = ref.key ?? DEFAULT_API_KEY_DATA_KEY;
    const b64 = secret.data?.[key];
    if (b64 === undefined) return refused('InvalidSecretRef', `${at}.key`, `${what} has no key "${key}" (its keys: ${Object.keys(secret.data ?? {}).sort().map((k) => `"${k}"`).join(', ') || 'none'}); set key`);
    const bytes = Buffer.from(b64, 'base64');
    if (bytes.length > 65536) return refused('InvalidSecretRef', at, `${what} key "${key}" holds ${bytes.length} bytes; a provider key is a few hundred`);
    // A problem the conversion finds in the text is the Secret's.
    this.reason = 'InvalidSecretRef';
    return { ok: true, value: { origin: `${what} key ${key}`, text: bytes.toString('utf8') } };
  }

  secrets(at: string): SourceResult<never> {
    return { ok: false, reason: 'Invalid', problem: { path: at, message: 'a Backend reads one Secret key' } };
  }

  outbound(at: string): SourceResult<string> {
    return { ok: false, reason: 'Invalid', problem: { path: at, message: 'a Backend names no outbound target' } };
  }
}

function caBundle(b: TollgateBackend, ns: string, ctx: Context, problems: Problem[]): string | null {
  const refs = b.spec.tls?.caCertificateRefs ?? [];
  if (!refs.length) return null;
  const parts: string[] = [];
  let total = 0;
  refs.forEach((r, i) => {
    const at = `spec.tls.caCertificateRefs[${i}]`;
    const cm: V1ConfigMap | undefined = ctx.configMaps.get(`${ns}/${r.name}`);
    const pem = cm?.data?.['ca.crt'];
    if (!cm) return problems.push({ path: at, message: `ConfigMap ${ns}/${r.name} does not exist; create it or fix the name` });
    if (pem === undefined) return problems.push({ path: at, message: `ConfigMap ${ns}/${r.name} has no key "ca.crt"; put the PEM certificates there` });
    total += pem.length;
    if (total > MAX_CA_BUNDLE_BYTES) return problems.push({ path: at, message: `the CA certificates hold more than ${MAX_CA_BUNDLE_BYTES} bytes together` });
    try {
      new X509Certificate(pem);
    } catch {
      return problems.push({ path: at, message: `ConfigMap ${ns}/${r.name} key "ca.crt" is not a PEM certificate` });
    }
    parts.push(pem.trim());
  });
  return `${parts.join('\n')}\n`;
}

function toTls(b: TollgateBackend, ns: string, ctx: Context, problems: Problem[]): BackendTLSIR | undefined {
  const t = b.spec.tls;
  if (!t) return undefined;
  // The CRD has no client certificate: the proxy shows none to a Backend.
  return backendTlsIR({ caCertificates: caBundle(b, ns, ctx, problems), hostname: t.hostname ?? b.spec.hostname, subjectAltNames: t.subjectAltNames, clientCertificate: null, minVersion: t.minVersion });
}

function checkBackend(b: TollgateBackend, ctx: Context): BackendState {
  const ns = b.metadata.namespace ?? '';
  const problems: Problem[] = [];
  const tls = toTls(b, ns, ctx, problems);
  let reason: Reason = problems.length ? 'InvalidConfigMapRef' : 'Invalid';
  const p = b.spec.provider;
  let provider = undefined;
  if (p) {
    const sources = new BackendSources(ns, ctx);
    const before = problems.length;
    const key = p.apiKeySecretRef ? { at: 'spec.provider.apiKeySecretRef', ref: { kind: 'Secret' as const, name: p.apiKeySecretRef.name, namespace: p.apiKeySecretRef.namespace, key: p.apiKeySecretRef.key } } : null;
    provider = toProviderIR(p, 'spec.provider', key, sources, problems) ?? undefined;
    if (problems.length > before && reason === 'Invalid') reason = sources.reason;
  }
  if (problems.length) return { accepted: fail(reason, problems.map((x) => `${x.path}: ${x.message}`).join('; ')), target: null };
  const target: BackendTarget = {
    kind: 'external',
    name: `${ns}/${b.metadata.name}`,
    namespace: ns,
    hostname: b.spec.hostname,
    port: b.spec.port,
    ...(tls ? { tls } : {}),
    ...(provider ? { provider } : {}),
  };
  return { accepted: ok('Accepted', 'accepted'), target };
}

// Kept by the Backend object while what it read is the same objects: the same state object
// (and so the same IR) as long as nothing changed, which keeps the route caches warm.
const cache = new WeakMap<TollgateBackend, { readonly deps: readonly unknown[]; readonly state: BackendState }>();

function depsOf(b: TollgateBackend, ctx: Context): unknown[] {
  const refs = backendReferences(b);
  const namespaces = new Set([...refs.secrets, ...refs.configMaps].map((k) => k.slice(0, k.indexOf('/'))));
  return [
    ...refs.secrets.map((k) => ctx.secrets.get(k)),
    ...refs.configMaps.map((k) => ctx.configMaps.get(k)),
    ...[...namespaces].flatMap((n) => ctx.grants.inNamespace(n)),
  ];
}

export function backendState(b: TollgateBackend, ctx: Context): BackendState {
  const deps = depsOf(b, ctx);
  const hit = cache.get(b);
  if (hit && sameObjects(hit.deps, deps)) return hit.state;
  const state = checkBackend(b, ctx);
  cache.set(b, { deps, state });
  return state;
}

export function backendStatus(b: TollgateBackend, state: BackendState): BackendStatusReport {
  const gen = generationOf(b.metadata);
  return { namespace: b.metadata.namespace ?? '', name: b.metadata.name, generation: gen, conditions: [condition('Accepted', state.accepted.ok, state.accepted.reason, state.accepted.message, gen)] };
}

/** Whether `hostname` is on an allow-list of the GatewayClass's parameters (`backendHosts`): exact names and `*.` suffixes; null allows every host. */
export function hostAllowed(hostname: string, allowed: readonly string[] | null): boolean {
  if (allowed === null) return true;
  const h = hostname.toLowerCase();
  return allowed.some((a) => (a.startsWith('*.') ? h.endsWith(a.slice(1)) && h.length > a.length - 1 : h === a));
}
