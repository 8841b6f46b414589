// Proxy parameters from ConfigMaps: the GatewayClass's `spec.parametersRef` gives class-wide
// defaults, a Gateway's `spec.infrastructure.parametersRef` overrides them key by key (the
// Gateway API leaves merging to implementations and recommends exactly this). Both name a
// ConfigMap (group "", kind ConfigMap): the Gateway's in its own namespace, the class's in
// the namespace the reference names. The ConfigMap must carry the label
// `tollgate.dev/parameters` (any value): a ConfigMap that happens to have the name (read
// whole because a reference names it) is not taken for parameters without it.
//
//   data:
//     replicas: "2"            proxy pods (0-100)
//     cpuRequest: 250m         container resources; no CPU limit unless set
//     memoryRequest: 256Mi
//     cpuLimit: "1"
//     memoryLimit: 1Gi
//     image: registry.example.com/tollgate:0.2.0   the proxy image (default: the controller's --proxy-image)
//     maxBufferedRequestBytes: "134217728"         a process setting of the proxies: the bounds
//     requestBodyTimeout: 2m                       of PROXY_PROCESS_PARAMETERS (@tollgate/api),
//                                                  named and checked as `config:` of a file
//
// A reference that cannot be followed, an unknown key or a bad value refuses the Gateway (or
// the class) with reason InvalidParameters and a message naming the ConfigMap, the key and the
// fix, as the Gateway API asks. Pure: the ConfigMaps are looked up through a function.
//
// What the proxies run is the cluster admin's (image-policy.ts): `image` in the class's
// ConfigMap is taken as it is; a Gateway's own choice (its ConfigMap's `image`, the
// tollgate.dev/image annotation) only when --gateway-proxy-images allows it; the
// infrastructure labels and annotations are checked against the keys a Gateway may not set
// (infrastructure.ts): anything else refuses the Gateway, naming the field. This is the one
// place those settings are read.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Gateway, GatewayClass } from '../types/gateway-api.js';
import { INTEGER_PROCESS_PARAMETERS, processSettingsProblems, PROXY_PROCESS_PARAMETERS } from '@tollgate/api';
import { describeAllowList, imageAllowed, parseImage, type ImageAllowList } from './image-policy.js';
import { DEFAULT_DENIED_DOMAINS, infrastructureProblems } from './infrastructure.js';
import { IMAGE_ANNOTATION, MAX_REPLICAS, proxySettings, quantityValue, type ProxySettings } from './overrides.js';

export const PARAMETERS_LABEL = 'tollgate.dev/parameters';

/**
 * The class-only key naming the hosts Backend resources may name (the tenancy rule: external
 * host names only through a Backend, which the cluster admin can restrict): names and `*.`
 * suffixes, separated by commas, spaces or lines. Absent: every host.
 */
export const BACKEND_HOSTS_KEY = 'backendHosts';
export const MAX_BACKEND_HOSTS = 256;
const BACKEND_HOST_ENTRY = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The entries of a backendHosts value, or the problem with it. */
export function parseBackendHosts(value: string, id: string): { ok: true; hosts: string[] } | { ok: false; message: string } {
  const hosts = value.split(/[\s,]+/).filter(Boolean);
  if (hosts.length > MAX_BACKEND_HOSTS) return { ok: false, message: `ConfigMap ${id}: key ${BACKEND_HOSTS_KEY} lists ${hosts.length} hosts, more than ${MAX_BACKEND_HOSTS}; use *.<domain> entries` };
  const bad = hosts.find((h) => h.length > 253 || !BACKEND_HOST_ENTRY.test(h));
  if (bad !== undefined) return { ok: false, message: `ConfigMap ${id}: key ${BACKEND_HOSTS_KEY} entry "${bad}" is not a lower-case host name or *.<domain>; e.g. "api.openai.com, *.openai.azure.com"` };
  return { ok: true, hosts };
}

/** The hosts Backends may name on Gateways of this class (its parameters' backendHosts); null: every host. */
export function classBackendHosts(gc: GatewayClass, lookup: ConfigMapLookup): readonly string[] | null {
  const ref = gc.spec.parametersRef;
  const found = ref && follow(ref, 'spec.parametersRef', ref.namespace, lookup);
  const value = found && found.ok ? found.configMap.data?.[BACKEND_HOSTS_KEY] : undefined;
  if (value === undefined) return null;
  const parsed = parseBackendHosts(value, found && found.ok ? found.id : '');
  // A bad list refuses the class (readData): nothing of it is served; allow nothing meanwhile.
  return parsed.ok ? parsed.hosts : [];
}

export type ConfigMapLookup = (namespace: string, name: string) => V1ConfigMap | undefined;

/** What the cluster admin decided for every Gateway: the defaults and the images Gateways may choose. */
export interface ParameterPolicy {
  /** Used where nothing is set (the image: the controller's --proxy-image). */
  readonly defaults: ProxySettings;
  /** --gateway-proxy-images. */
  readonly gatewayImages: ImageAllowList;
  /** --gateway-infrastructure-denied-domains: keys under them (subdomains too) a Gateway may not set; default DEFAULT_DENIED_DOMAINS. */
  readonly infrastructureDenied?: readonly string[];
}

export type ParametersVerdict =
  | { readonly ok: true; readonly settings: ProxySettings; /** `<ns>/<name>` of each ConfigMap read, class first. */ readonly sources: readonly string[] }
  | { readonly ok: false; readonly message: string };

interface Ref {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

const RESOURCE_KEYS = {
  cpuRequest: ['requests', 'cpu', '250m'],
  memoryRequest: ['requests', 'memory', '256Mi'],
  cpuLimit: ['limits', 'cpu', '1'],
  memoryLimit: ['limits', 'memory', '1Gi'],
} as const;

export const PARAMETER_KEYS = ['replicas', ...Object.keys(RESOURCE_KEYS), 'image', BACKEND_HOSTS_KEY, ...PROXY_PROCESS_PARAMETERS] as const;

const PROCESS_KEYS: ReadonlySet<string> = new Set(PROXY_PROCESS_PARAMETERS);

/** `<namespace>/<name>` of the ConfigMap a reference names, or why it cannot name one. */
function configMapKey(ref: Ref, field: string, namespace: string | undefined): { ok: true; namespace: string; id: string } | { ok: false; message: string } {
  if (ref.group !== '' || ref.kind !== 'ConfigMap') {
    return { ok: false, message: `${field} names ${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.name}; parameters are read from a ConfigMap: set group "" and kind ConfigMap` };
  }
  if (!namespace) return { ok: false, message: `${field}.namespace is missing: a ConfigMap lives in a namespace; name it, e.g. namespace: tollgate-system` };
  return { ok: true, namespace, id: `${namespace}/${ref.name}` };
}

/** `<namespace>/<name>` of the ConfigMap a class's parametersRef names (what the ConfigMap cache reads whole), if it names one. */
export function classParametersConfigMap(gc: GatewayClass): string | undefined {
  const ref = gc.spec.parametersRef;
  const key = ref && configMapKey(ref, '', ref.namespace);
  return key?.ok ? key.id : undefined;
}

/** The same for a Gateway's infrastructure parametersRef (in its own namespace). */
export function gatewayParametersConfigMap(gateway: Gateway): string | undefined {
  const ref = gateway.spec.infrastructure?.parametersRef;
  const key = ref && configMapKey(ref, '', gateway.metadata.namespace);
  return key?.ok ? key.id : undefined;
}

/** The ConfigMap a reference names, or why it cannot be followed. */
function follow(ref: Ref, field: string, namespace: string | undefined, lookup: ConfigMapLookup): { ok: true; configMap: V1ConfigMap; id: string } | { ok: false; message: string } {
  const key = configMapKey(ref, field, namespace);
  if (!key.ok) return key;
  const { id } = key;
  const configMap = lookup(key.namespace, ref.name);
  if (!configMap || configMap.metadata?.labels?.[PARAMETERS_LABEL] === undefined) {
    return {
      ok: false,
      message: `${field}: ConfigMap ${id} not found among ConfigMaps labelled ${PARAMETERS_LABEL}: create it with that label, or add it: kubectl label configmap ${ref.name} -n ${key.namespace} ${PARAMETERS_LABEL}=true`,
    };
  }
  return { ok: true, configMap, id };
}

/** Why a Gateway may not run `image`, or undefined when it may. `field` names where it was set, `fix` how to take it out. */
function gatewayImageProblem(image: string, field: string, fix: string, gatewayImages: ImageAllowList): string | undefined {
  if (!parseImage(image)) return `${field} "${image}" is not an image reference; e.g. "registry.example.com/tollgate:0.2.0"`;
  if (imageAllowed(image, gatewayImages)) return undefined;
  return `${field} "${image}": the proxy image is the cluster admin's choice, and --gateway-proxy-images does not allow this one (allowed: ${describeAllowList(gatewayImages)}); ${fix}, or ask the cluster admin to allow the image or to set it in the GatewayClass's parameters`;
}

/**
 * Applies one ConfigMap's keys over `base`; every problem names the key and a good value.
 * `gatewayImages`: the ConfigMap is a Gateway's, whose image must be allowed; undefined: the class's.
 */
function readData(configMap: V1ConfigMap, id: string, base: ProxySettings, gatewayImages?: ImageAllowList): { settings: ProxySettings; problems: string[] } {
  const problems: string[] = [];
  let replicas = base.replicas;
  let image = base.image;
  const requests: Record<string, string | undefined> = { ...base.resources.requests };
  const limits: Record<string, string | undefined> = { ...base.resources.limits };
  const process: Record<string, string | number> = { ...base.process };
  const processKeys: string[] = [];
  if (configMap.binaryData && Object.keys(configMap.binaryData).length) problems.push(`ConfigMap ${id}: binaryData is not read; put the keys under data`);
  for (const [key, value] of Object.entries(configMap.data ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const v = value.trim();
    if (key === 'replicas') {
      if (/^[0-9]{1,3}$/.test(v) && Number(v) <= MAX_REPLICAS) replicas = Number(v);
      else problems.push(`ConfigMap ${id}: key replicas "${value}" is not a whole number from 0 to ${MAX_REPLICAS}; e.g. "2"`);
    } else if (key === 'image') {
      const problem = gatewayImages ? gatewayImageProblem(v, `ConfigMap ${id}: key image`, 'remove the key', gatewayImages) : parseImage(v) ? undefined : `ConfigMap ${id}: key image "${value}" is not an image reference; e.g. "registry.example.com/tollgate:0.2.0"`;
      if (problem) problems.push(problem);
      else image = v;
    } else if (key === BACKEND_HOSTS_KEY) {
      if (gatewayImages) problems.push(`ConfigMap ${id}: key ${BACKEND_HOSTS_KEY} is the cluster admin's: set it in the GatewayClass's parameters, not a Gateway's`);
      else {
        const parsed = parseBackendHosts(v, id);
        if (!parsed.ok) problems.push(parsed.message);
      }
    } else if (key in RESOURCE_KEYS) {
      const [kind, resource, example] = RESOURCE_KEYS[key as keyof typeof RESOURCE_KEYS];
      const q = quantityValue(v);
      if (q === undefined || q === 0) problems.push(`ConfigMap ${id}: key ${key} "${value}" is not a positive quantity; e.g. "${example}"`);
      else (kind === 'requests' ? requests : limits)[resource] = v;
    } else if (PROCESS_KEYS.has(key)) {
      // A ConfigMap holds strings: a number setting is given as its digits.
      process[key] = INTEGER_PROCESS_PARAMETERS.has(key) && /^[0-9]{1,16}$/.test(v) ? Number(v) : v;
      processKeys.push(key);
    } else {
      problems.push(`ConfigMap ${id}: key ${key} is not a proxy parameter; the keys are ${PARAMETER_KEYS.join(', ')}`);
    }
  }
  // Checked merged (a budget against the class's body size), reported on this ConfigMap's keys.
  if (processKeys.length) {
    for (const p of processSettingsProblems(process)) problems.push(`ConfigMap ${id}: key ${p.path || processKeys.join(', ')}: ${p.message}`);
  }
  const resources = { requests: compact(requests), limits: compact(limits) };
  return { settings: proxySettings(replicas, resources, image, process), problems };
}

/** A request above its limit is refused by the API server in the pod; say so here, naming both keys. */
function requestAboveLimit(settings: ProxySettings, sources: readonly string[]): string[] {
  const out: string[] = [];
  for (const resource of ['cpu', 'memory'] as const) {
    const req = settings.resources.requests[resource];
    const lim = settings.resources.limits[resource];
    if (req !== undefined && lim !== undefined && quantityValue(req)! > quantityValue(lim)!) {
      out.push(`${resource}: the request ${req} is above the limit ${lim} (from ${sources.map((s) => `ConfigMap ${s}`).join(' and ') || 'the defaults'}): lower ${resource}Request or raise ${resource}Limit`);
    }
  }
  return out;
}

/** The class's parameters over the defaults; an error refuses the class (Accepted False, InvalidParameters). */
export function classParameters(gc: GatewayClass, lookup: ConfigMapLookup, policy: ParameterPolicy): ParametersVerdict {
  const ref = gc.spec.parametersRef;
  if (!ref) return { ok: true, settings: policy.defaults, sources: [] };
  const found = follow(ref, 'spec.parametersRef', ref.namespace, lookup);
  if (!found.ok) return found;
  const { settings, problems } = readData(found.configMap, found.id, policy.defaults);
  problems.push(...requestAboveLimit(settings, [found.id]));
  return problems.length ? { ok: false, message: problems.join('; ') } : { ok: true, settings, sources: [found.id] };
}

/**
 * The settings of a Gateway's proxies before its resource annotations (overrides.ts): the
 * defaults, then its class's ConfigMap, then its own, then its image annotation. An error
 * refuses the Gateway (Accepted False, InvalidParameters).
 */
export function gatewayParameters(gateway: Gateway, gc: GatewayClass | undefined, lookup: ConfigMapLookup, policy: ParameterPolicy): ParametersVerdict {
  const base = gc ? classParameters(gc, lookup, policy) : ({ ok: true, settings: policy.defaults, sources: [] } as const);
  if (!base.ok) return { ok: false, message: `GatewayClass ${gc!.metadata.name}: ${base.message}` };
  const ref = gateway.spec.infrastructure?.parametersRef;
  let settings = base.settings;
  let sources = base.sources;
  const problems: string[] = [];
  if (ref) {
    const found = follow(ref, 'spec.infrastructure.parametersRef', gateway.metadata.namespace, lookup);
    if (!found.ok) return found;
    const read = readData(found.configMap, found.id, base.settings, policy.gatewayImages);
    settings = read.settings;
    sources = [...base.sources, found.id];
    problems.push(...read.problems, ...requestAboveLimit(settings, sources));
  }
  const annotations = gateway.spec.infrastructure?.annotations ?? {};
  const annotated = annotations[IMAGE_ANNOTATION];
  if (annotated !== undefined) {
    const problem = gatewayImageProblem(annotated, `spec.infrastructure.annotations["${IMAGE_ANNOTATION}"]`, 'remove the annotation', policy.gatewayImages);
    if (problem) problems.push(problem);
    else settings = { ...settings, image: annotated };
  }
  problems.push(...infrastructureProblems(gateway, policy.infrastructureDenied ?? DEFAULT_DENIED_DOMAINS));
  return problems.length ? { ok: false, message: problems.join('; ') } : { ok: true, settings, sources };
}

function compact(r: Record<string, string | undefined>): { cpu?: string; memory?: string } {
  const out: { cpu?: string; memory?: string } = {};
  if (r.cpu !== undefined) out.cpu = r.cpu;
  if (r.memory !== undefined) out.memory = r.memory;
  return out;
}
