// The certificates of an HTTPS listener: its tls.certificateRefs resolved to Secrets of type
// kubernetes.io/tls, checked (PEM, the key of the certificate) and turned into IR
// certificates whose key is a Secret value, so that no status message, log line or admin view
// can print it. A reference across namespaces needs a ReferenceGrant from Gateways of the
// listener's namespace to Secrets there.
//
// A listener whose references are partly broken keeps the certificates that resolved
// (ResolvedRefs False names the broken ones); one with none left is not programmed.
import { checkCertificate, Secret, type CertificateIR } from '@tollgate/api';
import type { V1Secret } from '@kubernetes/client-node';
import { fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import type { ReferenceGrants } from './referencegrant.js';
import { GATEWAY_GROUP, type Gateway, type Listener, type ListenerSet, type SecretObjectReference } from '../types/gateway-api.js';

export const TLS_SECRET_TYPE = 'kubernetes.io/tls';

export interface ListenerCertificates {
  /** ResolvedRefs. */
  readonly verdict: Verdict;
  /** The certificates that resolved, in reference order. */
  readonly certificates: readonly CertificateIR[];
}

type Resolved = { readonly ok: true; readonly certificate: CertificateIR } | { readonly ok: false; readonly reason: string; readonly problem: string };

// Parsing a key is the costly part and a Secret is immutable once cached (an informer
// replaces it on change): checked once per Secret object, whatever the number of listeners
// and translations that use it.
const checked = new WeakMap<V1Secret, Resolved>();

function fromSecret(secret: V1Secret, namespace: string, name: string): Resolved {
  const hit = checked.get(secret);
  if (hit) return hit;
  const result = checkSecret(secret, namespace, name);
  checked.set(secret, result);
  return result;
}

function checkSecret(secret: V1Secret, namespace: string, name: string): Resolved {
  const what = `Secret ${namespace}/${name}`;
  if (secret.type !== TLS_SECRET_TYPE) return { ok: false, reason: 'InvalidCertificateRef', problem: `${what} is of type ${secret.type ?? 'Opaque'}; certificates come from Secrets of type ${TLS_SECRET_TYPE}` };
  const data = secret.data ?? {};
  const crt = data['tls.crt'];
  const key = data['tls.key'];
  if (!crt || !key) return { ok: false, reason: 'InvalidCertificateRef', problem: `${what} has no ${!crt ? 'tls.crt' : 'tls.key'}; a ${TLS_SECRET_TYPE} Secret holds both` };
  const certificate = Buffer.from(crt, 'base64').toString('utf8');
  const keyPem = Buffer.from(key, 'base64').toString('utf8');
  const check = checkCertificate(certificate, keyPem);
  if (!check.ok) return { ok: false, reason: 'InvalidCertificateRef', problem: `${what}: ${check.field === 'certificate' ? 'tls.crt' : 'tls.key'} ${check.problem}` };
  return { ok: true, certificate: { origin: { kind: 'Secret', namespace, name }, certificate, key: new Secret(keyPem) } };
}

/** What declares a listener: the ReferenceGrants its certificate references need are from its kind and namespace. */
export type CertificateOwner = Pick<Gateway, 'kind' | 'metadata'> | Pick<ListenerSet, 'kind' | 'metadata'>;

type Target = { readonly ok: true; readonly namespace: string } | { readonly ok: false; readonly reason: string; readonly problem: string };

/** The Secret a certificate reference may read, or why it may not (the one rule for both translation and the Secret cache). */
function target(ref: SecretObjectReference, at: string, gatewayNs: string, grants: ReferenceGrants, fromKind: CertificateOwner['kind'] = 'Gateway'): Target {
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Secret';
  if (group !== '' || kind !== 'Secret')
    return { ok: false, reason: 'InvalidCertificateRef', problem: `${at} refers to ${group ? `${group}/` : ''}${kind} ${ref.name}; only core Secrets hold certificates` };
  const namespace = ref.namespace ?? gatewayNs;
  if (!grants.permits({ group: GATEWAY_GROUP, kind: fromKind, namespace: gatewayNs }, { group: '', kind: 'Secret', namespace, name: ref.name }))
    return {
      ok: false,
      reason: 'RefNotPermitted',
      problem: `${at} refers to Secret ${namespace}/${ref.name} in another namespace; a ReferenceGrant in ${namespace} must allow ${fromKind}s of ${gatewayNs}`,
    };
  return { ok: true, namespace };
}

/** `<namespace>/<name>` of each Secret the Gateway's HTTPS and TLS Terminate listeners and its backend client certificate may read. */
export function certificateSecrets(gateway: Gateway, grants: ReferenceGrants): string[] {
  const ns = gateway.metadata.namespace ?? '';
  const out: string[] = [];
  const client = gateway.spec.tls?.backend?.clientCertificateRef;
  if (client) {
    const t = target(client, '', ns, grants);
    if (t.ok) out.push(`${t.namespace}/${client.name}`);
  }
  out.push(...listenerSecrets(gateway, grants));
  return out;
}

/** `<namespace>/<name>` of each Secret the HTTPS and TLS Terminate listeners of a Gateway or ListenerSet may read. */
export function listenerSecrets(owner: CertificateOwner & { readonly spec: { readonly listeners: readonly Listener[] } }, grants: ReferenceGrants): string[] {
  const ns = owner.metadata.namespace ?? '';
  const out: string[] = [];
  for (const l of owner.spec.listeners) {
    // TLS listeners of mode Passthrough hold no certificate (the backend's is the one the client sees).
    if (l.protocol !== 'HTTPS' && !(l.protocol === 'TLS' && l.tls?.mode === 'Terminate')) continue;
    for (const ref of l.tls?.certificateRefs ?? []) {
      const t = target(ref, '', ns, grants, owner.kind);
      if (t.ok) out.push(`${t.namespace}/${ref.name}`);
    }
  }
  return out;
}

function resolve(ref: SecretObjectReference, index: number, owner: CertificateOwner, ctx: Context): Resolved {
  return resolveAt(ref, `tls.certificateRefs[${index}]`, owner.metadata.namespace ?? '', ctx, owner.kind);
}

function resolveAt(ref: SecretObjectReference, at: string, gatewayNs: string, ctx: Context, fromKind: CertificateOwner['kind'] = 'Gateway'): Resolved {
  const t = target(ref, at, gatewayNs, ctx.grants, fromKind);
  if (!t.ok) return t;
  const namespace = t.namespace;
  const secret = ctx.secrets.get(`${namespace}/${ref.name}`);
  if (!secret)
    return { ok: false, reason: 'InvalidCertificateRef', problem: `${at} refers to Secret ${namespace}/${ref.name}, which does not exist` };
  const r = fromSecret(secret, namespace, ref.name);
  return r.ok ? r : { ...r, problem: `${at}: ${r.problem}` };
}

/** Null for a listener that is not HTTPS. */
export function listenerCertificates(l: Listener, owner: CertificateOwner, ctx: Context): ListenerCertificates | null {
  if (l.protocol !== 'HTTPS' && l.protocol !== 'TLS') return null;
  const refs = l.tls?.certificateRefs ?? [];
  if (!refs.length) return { verdict: fail('InvalidCertificateRef', `${l.protocol === 'TLS' ? 'a TLS listener of mode Terminate' : 'an HTTPS listener'} needs tls.certificateRefs naming a Secret of type kubernetes.io/tls`), certificates: [] };
  const certificates: CertificateIR[] = [];
  const problems: { reason: string; problem: string }[] = [];
  refs.forEach((ref, i) => {
    const r = resolve(ref, i, owner, ctx);
    if (r.ok) certificates.push(r.certificate);
    else problems.push(r);
  });
  if (!problems.length) return { verdict: ok('ResolvedRefs', 'all references resolved'), certificates };
  // RefNotPermitted only when that is the whole story: any other broken reference is the
  // more useful reason to show.
  const reason = problems.every((p) => p.reason === 'RefNotPermitted') ? 'RefNotPermitted' : 'InvalidCertificateRef';
  return { verdict: fail(reason, problems.map((p) => p.problem).join('; ')), certificates };
}

/**
 * The certificate a Gateway's proxies present to backends that ask for one
 * (spec.tls.backend.clientCertificateRef), with the Gateway's ResolvedRefs verdict; null when
 * the Gateway names none. Checked like a listener's (a kubernetes.io/tls Secret, the key of
 * the certificate); its key is a Secret value in the IR, as a listener's.
 */
export function backendClientCertificate(gateway: Gateway, ctx: Context): { readonly verdict: Verdict; readonly certificate: CertificateIR | null } | null {
  const ref = gateway.spec.tls?.backend?.clientCertificateRef;
  if (!ref) return null;
  const r = resolveAt(ref, 'spec.tls.backend.clientCertificateRef', gateway.metadata.namespace ?? '', ctx);
  if (r.ok) return { verdict: ok('ResolvedRefs', 'all references resolved'), certificate: r.certificate };
  return { verdict: fail(r.reason === 'RefNotPermitted' ? 'RefNotPermitted' : 'InvalidClientCertificateRef', r.problem), certificate: null };
}
