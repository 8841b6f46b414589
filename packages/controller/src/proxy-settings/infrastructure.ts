// spec.infrastructure.labels and .annotations: the Gateway API asks that they go on every
// object made for the Gateway (deployer/render.ts puts them on the ServiceAccount, the
// Deployment and its pods, and the Service). They are the Gateway owner's choice, so they are
// bounded here: a Gateway may not set a key that tells the cluster how to run, schedule,
// network or secure the pods, nor one that the controller's own objects carry. A key refused,
// or a label or annotation out of bounds, refuses the Gateway (Accepted False,
// InvalidParameters) naming the key, as a bad parameter does: its proxies stay as they run.
//
// Refused always, by domain (the key's prefix, subdomains included):
//   - kubernetes.io and k8s.io, Kubernetes' own (AppArmor and seccomp profiles, node selectors,
//     pod-deletion-cost, safe-to-evict, service-proxy-name, gateway-name, ...), except
//     app.kubernetes.io (the recommended labels: name, instance, version, part-of), whose
//     managed-by and component are the deployer's;
//   - tollgate.dev, the project's own: as annotations, only the proxy settings of overrides.ts
//     (read there, never put on the pods); as labels, none.
// Refused by the cluster admin's choice: the domains of --gateway-infrastructure-denied-domains
// (DEFAULT_DENIED_DOMAINS: sidecar injectors, extra pod networks, disruption controls).
import type { Gateway } from '../types/gateway-api.js';
import { SETTING_ANNOTATIONS } from './overrides.js';

/** The Gateway API's own bounds (the CRD's), checked again here: a CRD may be older or edited. */
export const MAX_INFRASTRUCTURE_LABELS = 8;
export const MAX_INFRASTRUCTURE_ANNOTATIONS = 16;
export const MAX_ANNOTATION_VALUE_BYTES = 4096;
/** At most this many entries in --gateway-infrastructure-denied-domains. */
export const MAX_DENIED_DOMAINS = 256;

/** Kubernetes' and Tollgate's own domains: never a Gateway owner's, whatever the admin allows. */
export const RESERVED_DOMAINS = ['kubernetes.io', 'k8s.io', 'tollgate.dev'] as const;

/**
 * Domains whose keys change what runs in the proxy pods (a mesh's or a secret store's injected
 * containers), the networks they join or how they are disrupted: refused unless the cluster
 * admin sets --gateway-infrastructure-denied-domains otherwise.
 */
export const DEFAULT_DENIED_DOMAINS = [
  'istio.io',
  'linkerd.io',
  'kuma.io',
  'consul.hashicorp.com',
  'vault.hashicorp.com',
  'dapr.io',
  'instrumentation.opentelemetry.io',
  'cni.cncf.io',
  'multus-cni.io',
  'cni.projectcalico.org',
  'karpenter.sh',
] as const;

/** Labels of the deployer's objects: its ownership and the pod selector are its own. */
const DEPLOYER_KEYS = new Set(['app.kubernetes.io/managed-by', 'app.kubernetes.io/component']);
/** Annotations the API server turns into the containers' security profile: said as such. */
const SECURITY_PROFILE = ['container.apparmor.security.beta.kubernetes.io/', 'seccomp.security.alpha.kubernetes.io/', 'container.seccomp.security.alpha.kubernetes.io/'];

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** The entries of --gateway-infrastructure-denied-domains, or the first bad one named with the fix. */
export function parseDeniedDomains(entries: readonly string[]): { ok: true; domains: string[] } | { ok: false; problem: string } {
  if (entries.length > MAX_DENIED_DOMAINS) return { ok: false, problem: `${entries.length} domains, more than ${MAX_DENIED_DOMAINS}` };
  const bad = entries.find((d) => d.length > 253 || !DNS_SUBDOMAIN.test(d));
  if (bad !== undefined) return { ok: false, problem: `"${bad}" is not a lower-case DNS domain; give domains separated by commas, e.g. istio.io,linkerd.io (subdomains are included)` };
  return { ok: true, domains: [...entries] };
}

/** Whether `domain` is `parent` or one of its subdomains. */
const within = (domain: string, parent: string) => domain === parent || domain.endsWith(`.${parent}`);

/** Why a key may not be set by a Gateway, or undefined when it may. */
function keyProblem(kind: 'labels' | 'annotations', key: string, denied: readonly string[]): string | undefined {
  const slash = key.indexOf('/');
  const domain = slash < 0 ? '' : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (key.length > 317 || (slash >= 0 && (domain.length > 253 || !DNS_SUBDOMAIN.test(domain))) || !NAME.test(name)) {
    return 'is not a valid key: an optional DNS-domain prefix and "/", then a name of at most 63 letters, digits, "-", "_" and ".", starting and ending with a letter or digit';
  }
  if (!domain) return undefined;
  if (kind === 'annotations' && SECURITY_PROFILE.some((p) => key.startsWith(p))) {
    return "would change the proxy pods' security profile, which only the controller sets (the pods run under the runtime's default seccomp profile with every capability dropped)";
  }
  if (DEPLOYER_KEYS.has(key)) return "is the deployer's own label on the Gateway's objects (its pods are selected by it)";
  if (domain === 'app.kubernetes.io') return undefined;
  const kubernetes = ['kubernetes.io', 'k8s.io'].find((d) => within(domain, d));
  if (kubernetes !== undefined) {
    return `is under ${kubernetes}, Kubernetes' own keys: they change how the cluster runs, schedules, networks or secures the pods, which only the controller decides`;
  }
  if (kind === 'annotations' && domain === 'tollgate.dev') return undefined;
  if (within(domain, 'tollgate.dev')) {
    return `is under tollgate.dev, Tollgate's own keys${kind === 'labels' ? '' : `; the proxy settings are ${SETTING_ANNOTATIONS.join(', ')}`}`;
  }
  const deniedBy = denied.find((d) => within(domain, d));
  if (deniedBy !== undefined) {
    return `is under ${deniedBy}, which the cluster admin keeps from Gateways (--gateway-infrastructure-denied-domains): such keys change what runs in the proxy pods, the networks they join or how they are disrupted`;
  }
  return undefined;
}

/** Every problem of the Gateway's infrastructure labels and annotations, each naming the key and the fix. */
export function infrastructureProblems(gateway: Gateway, denied: readonly string[]): string[] {
  const problems: string[] = [];
  const infra = gateway.spec.infrastructure;
  const sorted = (m: Readonly<Record<string, string>> | undefined) => Object.entries(m ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const labels = sorted(infra?.labels);
  const annotations = sorted(infra?.annotations);
  if (labels.length > MAX_INFRASTRUCTURE_LABELS) problems.push(`spec.infrastructure.labels has ${labels.length} entries; at most ${MAX_INFRASTRUCTURE_LABELS}`);
  if (annotations.length > MAX_INFRASTRUCTURE_ANNOTATIONS) problems.push(`spec.infrastructure.annotations has ${annotations.length} entries; at most ${MAX_INFRASTRUCTURE_ANNOTATIONS}`);
  // Named at most at their length bound: a key is the user's, but a message stays readable.
  const field = (kind: string, key: string) => `spec.infrastructure.${kind}[${JSON.stringify(key.slice(0, 317))}]`;
  for (const [key, value] of labels.slice(0, MAX_INFRASTRUCTURE_LABELS)) {
    const problem = keyProblem('labels', key, denied);
    if (problem) problems.push(`${field('labels', key)} ${problem}; remove it`);
    else if (value.length > 63 || !LABEL_VALUE.test(value)) problems.push(`${field('labels', key)}: the value is not a label value (at most 63 letters, digits, "-", "_" and ".", starting and ending with a letter or digit)`);
  }
  for (const [key, value] of annotations.slice(0, MAX_INFRASTRUCTURE_ANNOTATIONS)) {
    const problem = keyProblem('annotations', key, denied);
    if (problem) problems.push(`${field('annotations', key)} ${problem}; remove it`);
    else if (Buffer.byteLength(value) > MAX_ANNOTATION_VALUE_BYTES) problems.push(`${field('annotations', key)}: the value is ${Buffer.byteLength(value)} bytes; at most ${MAX_ANNOTATION_VALUE_BYTES}`);
  }
  return problems;
}
