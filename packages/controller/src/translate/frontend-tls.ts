// spec.tls.frontend of a Gateway: the client certificates its HTTPS listeners ask for and check
// (Gateway API GatewayFrontendClientCertificateValidation). The validation of a port is its
// perPort entry, else the default; it applies to every HTTPS listener on that port and to no
// other listener. Its caCertificateRefs name ConfigMaps or Secrets with the PEM bundle under
// `ca.crt`, in the Gateway's namespace or, with a ReferenceGrant from Gateways of it, another.
//
// Each broken reference makes the listener's ResolvedRefs False (InvalidCACertificateKind,
// RefNotPermitted or InvalidCACertificateRef) and the listener checks clients against the CAs
// that resolved; with none resolved it is not accepted (NoValidCACertificate) and not served,
// since serving it without the check would let in the clients it is meant to keep out.
import { clientValidationIR, DEFAULT_CLIENT_VALIDATION_MODE, MAX_CA_CERTIFICATE_REFS, type CaBundle, type ClientValidationIR } from '@tollgate/api';
import { configMapBundle, secretBundle, type CaBundleCheck } from './ca-bundles.js';
import { fail, ok, type Verdict } from './conditions.js';
import type { Context } from './context.js';
import type { ReferenceGrants } from './referencegrant.js';
import { GATEWAY_GROUP, type CaCertificateReference, type FrontendTLSValidation, type Gateway, type Listener } from '../types/gateway-api.js';

export type CaReason = 'InvalidCACertificateRef' | 'InvalidCACertificateKind' | 'RefNotPermitted';

export interface ListenerClientValidation {
  /** What the listener checks clients against; null when no reference resolved. */
  readonly ir: ClientValidationIR | null;
  /** ResolvedRefs of the CA references. */
  readonly verdict: Verdict;
}

/** The validation of a port: its perPort entry, else the default (absent: no validation). */
function validationOf(gateway: Gateway, port: number): { readonly at: string; readonly validation: FrontendTLSValidation } | null {
  const frontend = gateway.spec.tls?.frontend;
  if (!frontend) return null;
  const i = (frontend.perPort ?? []).findIndex((p) => p.port === port);
  if (i >= 0) {
    const v = frontend.perPort![i]!.tls.validation;
    return v ? { at: `spec.tls.frontend.perPort[${i}].tls.validation`, validation: v } : null;
  }
  const v = frontend.default.validation;
  return v ? { at: 'spec.tls.frontend.default.validation', validation: v } : null;
}

type Target = { readonly ok: true; readonly kind: 'ConfigMap' | 'Secret'; readonly namespace: string } | { readonly ok: false; readonly reason: CaReason; readonly problem: string };

/** What a CA reference may read, or why not (the one rule for translation and the objects read whole). */
function target(ref: CaCertificateReference, at: string, gatewayNs: string, grants: ReferenceGrants): Target {
  const kind = ref.kind;
  if (ref.group !== '' || (kind !== 'ConfigMap' && kind !== 'Secret'))
    return { ok: false, reason: 'InvalidCACertificateKind', problem: `${at} refers to ${ref.group ? `${ref.group}/` : ''}${kind} ${ref.name}; CA certificates come from core ConfigMaps or Secrets (key ca.crt)` };
  const namespace = ref.namespace ?? gatewayNs;
  if (!grants.permits({ group: GATEWAY_GROUP, kind: 'Gateway', namespace: gatewayNs }, { group: '', kind, namespace, name: ref.name }))
    return { ok: false, reason: 'RefNotPermitted', problem: `${at} refers to ${kind} ${namespace}/${ref.name} in another namespace; a ReferenceGrant in ${namespace} must allow Gateways of ${gatewayNs} to refer to it` };
  return { ok: true, kind, namespace };
}

/** `<namespace>/<name>` of the ConfigMaps and Secrets the Gateway's client validation may read. */
export function frontendCaObjects(gateway: Gateway, grants: ReferenceGrants): { readonly configMaps: string[]; readonly secrets: string[] } {
  const frontend = gateway.spec.tls?.frontend;
  const out = { configMaps: [] as string[], secrets: [] as string[] };
  if (!frontend) return out;
  const ns = gateway.metadata.namespace ?? '';
  const all = [frontend.default.validation, ...(frontend.perPort ?? []).map((p) => p.tls.validation)];
  for (const v of all) {
    for (const ref of (v?.caCertificateRefs ?? []).slice(0, MAX_CA_CERTIFICATE_REFS)) {
      const t = target(ref, '', ns, grants);
      if (t.ok) (t.kind === 'ConfigMap' ? out.configMaps : out.secrets).push(`${t.namespace}/${ref.name}`);
    }
  }
  return out;
}

type Resolved = { readonly ok: true; readonly bundle: CaBundle } | { readonly ok: false; readonly reason: CaReason; readonly problem: string };

function resolve(ref: CaCertificateReference, at: string, gatewayNs: string, ctx: Context): Resolved {
  const t = target(ref, at, gatewayNs, ctx.grants);
  if (!t.ok) return t;
  const what = `${t.kind} ${t.namespace}/${ref.name}`;
  const key = `${t.namespace}/${ref.name}`;
  let check: CaBundleCheck;
  if (t.kind === 'ConfigMap') {
    const cm = ctx.configMaps.get(key);
    if (!cm) return { ok: false, reason: 'InvalidCACertificateRef', problem: `${at} refers to ${what}, which does not exist` };
    check = configMapBundle(cm);
  } else {
    const secret = ctx.secrets.get(key);
    if (!secret) return { ok: false, reason: 'InvalidCACertificateRef', problem: `${at} refers to ${what}, which does not exist` };
    check = secretBundle(secret);
  }
  return check.ok ? { ok: true, bundle: { origin: what, pem: check.pem } } : { ok: false, reason: 'InvalidCACertificateRef', problem: `${at}: ${what} ${check.problem}` };
}

function reasonOf(problems: readonly { readonly reason: CaReason }[]): CaReason {
  // A reason shared by every broken reference; else the one that asks for a fix of the objects.
  const first = problems[0]!.reason;
  return problems.every((p) => p.reason === first) ? first : 'InvalidCACertificateRef';
}

function check(validation: FrontendTLSValidation, at: string, gatewayNs: string, ctx: Context): ListenerClientValidation {
  const refs = validation.caCertificateRefs ?? [];
  if (!refs.length) return { ir: null, verdict: fail('InvalidCACertificateRef', `${at}.caCertificateRefs names no CA certificates; name a ConfigMap with ca.crt`) };
  const bundles: CaBundle[] = [];
  const problems: { reason: CaReason; problem: string }[] = [];
  refs.forEach((ref, i) => {
    const refAt = `${at}.caCertificateRefs[${i}]`;
    if (i >= MAX_CA_CERTIFICATE_REFS) {
      problems.push({ reason: 'InvalidCACertificateRef', problem: `${refAt} is beyond the ${MAX_CA_CERTIFICATE_REFS} references a validation may name; it is not read` });
      return;
    }
    const r = resolve(ref, refAt, gatewayNs, ctx);
    if (r.ok) bundles.push(r.bundle);
    else problems.push(r);
  });
  let ir: ClientValidationIR | null = null;
  if (bundles.length) {
    const joined = clientValidationIR(bundles, validation.mode ?? DEFAULT_CLIENT_VALIDATION_MODE);
    if (joined.ok) ir = joined.ir;
    else problems.push({ reason: 'InvalidCACertificateRef', problem: `${at}.caCertificateRefs: ${joined.problem}` });
  }
  const verdict = problems.length ? fail(reasonOf(problems), problems.map((p) => p.problem).join('; ')) : ok('ResolvedRefs', 'all references resolved');
  return { ir, verdict };
}

/** The client validation of an HTTPS listener; null when it checks no client certificate (or is not HTTPS). */
export function listenerClientValidation(l: Listener, gateway: Gateway, ctx: Context): ListenerClientValidation | null {
  if (l.protocol !== 'HTTPS') return null;
  const v = validationOf(gateway, l.port);
  if (!v) return null;
  const ns = gateway.metadata.namespace ?? '';
  // Every HTTPS listener of the port shares one: checked once per translation.
  return ctx.memo(`frontend-tls ${ns}/${gateway.metadata.name}:${l.port}`, () => check(v.validation, v.at, ns, ctx));
}

/**
 * The Gateway's InsecureFrontendValidationMode condition: a message naming where
 * AllowInsecureFallback is set, or null when it is set nowhere.
 */
export function insecureFrontendMode(gateway: Gateway): string | null {
  const frontend = gateway.spec.tls?.frontend;
  if (!frontend) return null;
  const where: string[] = [];
  if (frontend.default.validation?.mode === 'AllowInsecureFallback') where.push('the default');
  for (const p of frontend.perPort ?? []) if (p.tls.validation?.mode === 'AllowInsecureFallback') where.push(`port ${p.port}`);
  if (!where.length) return null;
  return `spec.tls.frontend sets mode AllowInsecureFallback for ${where.join(', ')}: HTTPS listeners there serve clients without a valid certificate; only verified certificates are known to rules and keyed budgets`;
}
