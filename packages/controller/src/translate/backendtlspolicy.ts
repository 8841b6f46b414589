// BackendTLSPolicy (Gateway API v1, standard channel): TLS from the proxies to a Service port,
// or to a Backend resource (group tollgate.dev; its settings replace the Backend's own
// spec.tls). Each policy is checked once per translation: its CA certificates (ConfigMaps of its own
// namespace, key ca.crt, or wellKnownCACertificates System), its hostname and
// subjectAltNames; a target claimed by an older policy (then namespace/name) makes the newer
// one Conflicted. A backendRef to a targeted Service port gets the policy's BackendTLSIR (a
// policy naming the port by sectionName wins over one naming the whole Service); a port whose
// policy has no valid CA certificate gets an invalid backend, so its requests fail with a 5xx
// rather than going out unverified. Status: one ancestor per Gateway of ours that routes to a
// target, with Accepted and ResolvedRefs.
import type { V1ConfigMap, V1ServicePort } from '@kubernetes/client-node';
import { backendTlsIR, checkSubjectAltNames, type BackendTLSIR, type Problem } from '@tollgate/api';
import { configMapBundle } from './ca-bundles.js';
import { condition, fail, ok, type Verdict } from './conditions.js';
import { byKey, compareAge, generationOf, keyOf } from './keys.js';
import type { BackendTLSPolicyStatusReport, PolicyAncestorStatusReport } from './types.js';
import { BACKEND_GROUP, GATEWAY_GROUP, type BackendTLSPolicy, type Gateway, type HTTPBackendRef, type HTTPRoute } from '../types/gateway-api.js';

export const WELL_KNOWN_SYSTEM = 'System';

/** One policy, checked: the TLS its targets get, or why they get none. */
interface CheckedPolicy {
  readonly policy: BackendTLSPolicy;
  readonly key: string;
  /** Accepted: False when no CA certificate is usable (NoValidCACertificate) or a field cannot be honoured (Invalid). */
  readonly accepted: Verdict;
  readonly resolvedRefs: Verdict;
  /** Null when not accepted. */
  readonly tls: BackendTLSIR | null;
}

/** What a Service port's backends get: the policy's TLS, or an error that fails their requests. */
export type PortTls = { readonly ok: true; readonly tls: BackendTLSIR; readonly policy: string } | { readonly ok: false; readonly policy: string; readonly reason: string; readonly message: string };

export interface BackendTlsIndex {
  /** The TLS of a Service port (a policy naming the port wins over one naming the Service), or null: plain HTTP. */
  forPort(namespace: string, service: string, port: V1ServicePort): PortTls | null;
  /** The TLS of a Backend resource, or null: its own spec.tls decides. */
  forBackend(namespace: string, backend: string): PortTls | null;
  /** The objects the TLS of a Service or Backend of that name is decided from (its policies, their ConfigMaps): a route whose are unchanged keeps its rules. */
  dependencies(namespace: string, name: string): readonly unknown[];
  /** Status of every policy, given the routes (which Gateways send to each policy's targets). */
  status(routes: readonly RoutedGateways[], services: ServicePorts, controllerName: string): Map<string, BackendTLSPolicyStatusReport>;
}

/** What status reads of a translated route (httproute.ts TranslatedRoute): the route and the Gateways it is attached to. */
export interface RoutedGateways {
  readonly route: HTTPRoute;
  readonly attachments: readonly { readonly gateway: { readonly key: string; readonly gateway: Gateway } }[];
}

export type ServicePorts = (namespace: string, service: string, port: number) => V1ServicePort | undefined;

type Bundle = { readonly ok: true; readonly pem: string } | { readonly ok: false; readonly reason: 'InvalidCACertificateRef' | 'InvalidKind'; readonly problem: string };

function bundleOf(cm: V1ConfigMap, what: string): Bundle {
  const b = configMapBundle(cm);
  return b.ok ? b : { ok: false, reason: 'InvalidCACertificateRef', problem: `${what} ${b.problem}` };
}

function caCertificates(p: BackendTLSPolicy, configMap: (ns: string, name: string) => V1ConfigMap | undefined): { pem: string | null; problems: Bundle[]; invalid: Verdict | null } {
  const ns = p.metadata.namespace ?? '';
  const v = p.spec.validation;
  const refs = v.caCertificateRefs ?? [];
  if (!refs.length) {
    if (v.wellKnownCACertificates === WELL_KNOWN_SYSTEM) return { pem: null, problems: [], invalid: null };
    const why = v.wellKnownCACertificates
      ? `wellKnownCACertificates ${JSON.stringify(v.wellKnownCACertificates)} is not supported; use System, or caCertificateRefs`
      : 'names no CA certificates: set caCertificateRefs (ConfigMaps with ca.crt) or wellKnownCACertificates: System';
    return { pem: null, problems: [], invalid: fail('Invalid', `spec.validation ${why}`) };
  }
  const results = refs.map((ref, i): Bundle => {
    const at = `spec.validation.caCertificateRefs[${i}]`;
    if (ref.group !== '' || ref.kind !== 'ConfigMap')
      return { ok: false, reason: 'InvalidKind', problem: `${at} refers to ${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.name}; CA certificates come from core ConfigMaps (key ca.crt)` };
    const cm = configMap(ns, ref.name);
    if (!cm) return { ok: false, reason: 'InvalidCACertificateRef', problem: `${at} refers to ConfigMap ${ns}/${ref.name}, which does not exist` };
    const b = bundleOf(cm, `ConfigMap ${ns}/${ref.name}`);
    return b.ok ? b : { ...b, problem: `${at}: ${b.problem}` };
  });
  const good = results.filter((r): r is Extract<Bundle, { ok: true }> => r.ok);
  return { pem: good.length ? good.map((g) => g.pem.trimEnd()).join('\n') + '\n' : null, problems: results.filter((r) => !r.ok), invalid: null };
}

function check(p: BackendTLSPolicy, configMap: (ns: string, name: string) => V1ConfigMap | undefined): CheckedPolicy {
  const key = keyOf(p.metadata);
  const v = p.spec.validation;
  const problems: Problem[] = [];
  checkSubjectAltNames(v.subjectAltNames, 'spec.validation.subjectAltNames', problems);
  const ca = caCertificates(p, configMap);
  const bad = ca.problems as Extract<Bundle, { ok: false }>[];
  const resolvedRefs = bad.length
    ? fail(bad.some((b) => b.reason === 'InvalidCACertificateRef') ? 'InvalidCACertificateRef' : 'InvalidKind', bad.map((b) => b.problem).join('; '))
    : ok('ResolvedRefs', 'all references resolved');
  let accepted: Verdict;
  if (ca.invalid) accepted = ca.invalid;
  else if (problems.length) accepted = fail('Invalid', problems.map((x) => `${x.path}: ${x.message}`).join('; '));
  else if (bad.length && ca.pem === null) accepted = fail('NoValidCACertificate', `no CA certificate is usable: ${resolvedRefs.message}`);
  else accepted = ok('Accepted', 'accepted');
  const tls = accepted.ok ? backendTlsIR({ caCertificates: ca.pem, hostname: v.hostname, subjectAltNames: v.subjectAltNames }) : null;
  return { policy: p, key, accepted, resolvedRefs, tls };
}

const targetKey = (namespace: string, service: string, section: string) => `${namespace}/${service}#${section}`;
/** A Backend has no sections: a policy targets it whole. */
const backendKey = (namespace: string, backend: string) => `Backend ${namespace}/${backend}`;

type TargetRef = BackendTLSPolicy['spec']['targetRefs'][number];
const isService = (t: TargetRef) => t.group === '' && t.kind === 'Service';
const isBackend = (t: TargetRef) => t.group === BACKEND_GROUP && t.kind === 'Backend';

export function indexBackendTls(policies: readonly BackendTLSPolicy[], configMap: (ns: string, name: string) => V1ConfigMap | undefined): BackendTlsIndex {
  // Older first (then namespace/name): the first to claim a target keeps it.
  const ordered = [...policies].sort((a, b) => compareAge(a.metadata, b.metadata));
  const claims = new Map<string, CheckedPolicy>();
  const conflicted = new Map<string, string>();
  /** Policies by `<namespace>/<name>` of the Services and Backends they target. */
  const byTarget = new Map<string, BackendTLSPolicy[]>();
  const checked: CheckedPolicy[] = [];
  for (const p of ordered) {
    const c = check(p, configMap);
    checked.push(c);
    const ns = p.metadata.namespace ?? '';
    let claimed = 0;
    let lost: string | null = null;
    for (const t of p.spec.targetRefs) {
      if (!isService(t) && !isBackend(t)) continue;
      const list = byTarget.get(`${ns}/${t.name}`) ?? [];
      if (!list.includes(p)) list.push(p);
      byTarget.set(`${ns}/${t.name}`, list);
      const k = isBackend(t) ? backendKey(ns, t.name) : targetKey(ns, t.name, t.sectionName ?? '');
      const owner = claims.get(k);
      if (owner) lost = owner.key;
      else {
        claims.set(k, c);
        claimed++;
      }
    }
    if (lost !== null && claimed === 0) conflicted.set(c.key, `its targets are already the targets of the older BackendTLSPolicy ${lost}`);
  }
  const portTls = (c: CheckedPolicy): PortTls =>
    c.tls ? { ok: true, tls: c.tls, policy: c.key } : { ok: false, policy: c.key, reason: c.accepted.reason, message: `BackendTLSPolicy ${c.key} is not accepted: ${c.accepted.message}` };
  const policyFor = (namespace: string, service: string, port: V1ServicePort | undefined): CheckedPolicy | undefined =>
    (port?.name ? claims.get(targetKey(namespace, service, port.name)) : undefined) ?? claims.get(targetKey(namespace, service, ''));
  return {
    forPort(namespace, service, port) {
      const c = policyFor(namespace, service, port);
      return c ? portTls(c) : null;
    },
    forBackend(namespace, backend) {
      const c = claims.get(backendKey(namespace, backend));
      return c ? portTls(c) : null;
    },
    dependencies(namespace, name) {
      const list = byTarget.get(`${namespace}/${name}`) ?? [];
      return list.flatMap((p) => [p, ...(p.spec.validation.caCertificateRefs ?? []).map((r) => configMap(p.metadata.namespace ?? '', r.name))]);
    },
    status(routes, services, controllerName) {
      // Without a policy there is nothing to report, and no route needs reading: a cluster
      // without BackendTLSPolicies pays nothing per route here on each translation.
      if (!checked.length) return new Map();
      // Which of our Gateways send requests to each policy's targets.
      const gatewaysOf = new Map<string, Map<string, { namespace: string; name: string }>>();
      for (const tr of routes) {
        if (!tr.attachments.length) continue;
        const rns = tr.route.metadata.namespace ?? '';
        for (const rule of tr.route.spec.rules ?? []) {
          for (const ref of [...(rule.backendRefs ?? []), ...mirrorRefs(rule.filters)]) {
            const ns = ref.namespace ?? rns;
            // Every policy naming this target, the winner and the conflicted alike; a name no
            // policy targets is passed over before its Service port is looked up.
            const targeting = byTarget.get(`${ns}/${ref.name}`);
            if (!targeting) continue;
            const names = targetMatcher(ref, ns, services);
            if (!names) continue;
            for (const p of targeting) {
              if (!p.spec.targetRefs.some(names)) continue;
              const key = keyOf(p.metadata);
              const gws = gatewaysOf.get(key) ?? new Map<string, { namespace: string; name: string }>();
              gatewaysOf.set(key, gws);
              for (const a of tr.attachments) gws.set(a.gateway.key, { namespace: a.gateway.gateway.metadata.namespace ?? '', name: a.gateway.gateway.metadata.name });
            }
          }
        }
      }
      const out = new Map<string, BackendTLSPolicyStatusReport>();
      for (const c of byKey(checked.map((x) => ({ metadata: x.policy.metadata, c: x }))).map((x) => x.c)) {
        const gen = generationOf(c.policy.metadata);
        const lost = conflicted.get(c.key);
        const accepted = lost !== undefined ? fail('Conflicted', lost) : c.accepted;
        const gws = [...(gatewaysOf.get(c.key) ?? new Map<string, { namespace: string; name: string }>())].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        const ancestors: PolicyAncestorStatusReport[] = gws.slice(0, 16).map(([, g]) => ({
          ancestorRef: { group: GATEWAY_GROUP, kind: 'Gateway', namespace: g.namespace, name: g.name },
          controllerName,
          conditions: [condition('Accepted', accepted.ok, accepted.reason, accepted.message, gen), condition('ResolvedRefs', c.resolvedRefs.ok, c.resolvedRefs.reason, c.resolvedRefs.message, gen)],
        }));
        out.set(c.key, { namespace: c.policy.metadata.namespace ?? '', name: c.policy.metadata.name, generation: gen, ancestors });
      }
      return out;
    },
  };
}

/** Which target references name what `ref` sends to (a Service port or a Backend), or null: neither. */
function targetMatcher(ref: Omit<HTTPBackendRef, 'weight' | 'filters'>, namespace: string, services: ServicePorts): ((t: TargetRef) => boolean) | null {
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  if (group === BACKEND_GROUP && kind === 'Backend') return (t) => isBackend(t) && t.name === ref.name;
  if (group !== '' || kind !== 'Service' || ref.port === undefined) return null;
  const port = services(namespace, ref.name, ref.port);
  if (!port) return null;
  return (t) => isService(t) && t.name === ref.name && (t.sectionName === undefined || t.sectionName === port.name);
}

function mirrorRefs(filters: readonly { readonly type: string; readonly requestMirror?: { readonly backendRef: Omit<HTTPBackendRef, 'weight' | 'filters'> } }[] | undefined): Omit<HTTPBackendRef, 'weight' | 'filters'>[] {
  return (filters ?? []).flatMap((f) => (f.type === 'RequestMirror' && f.requestMirror ? [f.requestMirror.backendRef] : []));
}

/** `<namespace>/<name>` of the ConfigMaps BackendTLSPolicies name (read whole by the cache). */
export function backendTlsConfigMaps(policies: readonly BackendTLSPolicy[]): string[] {
  return policies.flatMap((p) => (p.spec.validation.caCertificateRefs ?? []).filter((r) => r.group === '' && r.kind === 'ConfigMap').map((r) => `${p.metadata.namespace ?? ''}/${r.name}`));
}
