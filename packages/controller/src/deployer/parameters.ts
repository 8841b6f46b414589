// Proxy parameters from ConfigMaps: the GatewayClass's `spec.parametersRef` gives class-wide
// defaults, a Gateway's `spec.infrastructure.parametersRef` overrides them key by key (the
// Gateway API leaves merging to implementations and recommends exactly this). Both name a
// ConfigMap (group "", kind ConfigMap): the Gateway's in its own namespace, the class's in
// the namespace the reference names. The ConfigMap must carry the label
// `tollgate.dev/parameters` (any value): the controller watches only those, so no other
// ConfigMap of the cluster is ever read or held in memory.
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
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Gateway, GatewayClass } from '../types/gateway-api.js';
import { INTEGER_PROCESS_PARAMETERS, processSettingsProblems, PROXY_PROCESS_PARAMETERS } from '@tollgate/api';
import { isImageReference, MAX_REPLICAS, proxySettings, quantityValue, type ProxySettings } from './overrides.js';

export const PARAMETERS_LABEL = 'tollgate.dev/parameters';

export type ConfigMapLookup = (namespace: string, name: string) => V1ConfigMap | undefined;

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

export const PARAMETER_KEYS = ['replicas', ...Object.keys(RESOURCE_KEYS), 'image', ...PROXY_PROCESS_PARAMETERS] as const;

const PROCESS_KEYS: ReadonlySet<string> = new Set(PROXY_PROCESS_PARAMETERS);

/** The ConfigMap a reference names, or why it cannot be followed. */
function follow(ref: Ref, field: string, namespace: string | undefined, lookup: ConfigMapLookup): { ok: true; configMap: V1ConfigMap; id: string } | { ok: false; message: string } {
  if (ref.group !== '' || ref.kind !== 'ConfigMap') {
    return { ok: false, message: `${field} names ${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.name}; parameters are read from a ConfigMap: set group "" and kind ConfigMap` };
  }
  if (!namespace) return { ok: false, message: `${field}.namespace is missing: a ConfigMap lives in a namespace; name it, e.g. namespace: tollgate-system` };
  const id = `${namespace}/${ref.name}`;
  const configMap = lookup(namespace, ref.name);
  if (!configMap) {
    return {
      ok: false,
      message: `${field}: ConfigMap ${id} not found among ConfigMaps labelled ${PARAMETERS_LABEL}: create it with that label, or add it: kubectl label configmap ${ref.name} -n ${namespace} ${PARAMETERS_LABEL}=true`,
    };
  }
  return { ok: true, configMap, id };
}

/** Applies one ConfigMap's keys over `base`; every problem names the key and a good value. */
function readData(configMap: V1ConfigMap, id: string, base: ProxySettings): { settings: ProxySettings; problems: string[] } {
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
      if (isImageReference(v)) image = v;
      else problems.push(`ConfigMap ${id}: key image "${value}" is not an image reference; e.g. "registry.example.com/tollgate:0.2.0"`);
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

/** The class's parameters over `defaults`; an error refuses the class (Accepted False, InvalidParameters). */
export function classParameters(gc: GatewayClass, lookup: ConfigMapLookup, defaults: ProxySettings): ParametersVerdict {
  const ref = gc.spec.parametersRef;
  if (!ref) return { ok: true, settings: defaults, sources: [] };
  const found = follow(ref, 'spec.parametersRef', ref.namespace, lookup);
  if (!found.ok) return found;
  const { settings, problems } = readData(found.configMap, found.id, defaults);
  problems.push(...requestAboveLimit(settings, [found.id]));
  return problems.length ? { ok: false, message: problems.join('; ') } : { ok: true, settings, sources: [found.id] };
}

/**
 * The settings of a Gateway's proxies before its annotations: the defaults, then its class's
 * ConfigMap, then its own. An error refuses the Gateway (Accepted False, InvalidParameters).
 */
export function gatewayParameters(gateway: Gateway, gc: GatewayClass | undefined, lookup: ConfigMapLookup, defaults: ProxySettings): ParametersVerdict {
  const base = gc ? classParameters(gc, lookup, defaults) : ({ ok: true, settings: defaults, sources: [] } as const);
  if (!base.ok) return { ok: false, message: `GatewayClass ${gc!.metadata.name}: ${base.message}` };
  const ref = gateway.spec.infrastructure?.parametersRef;
  if (!ref) return base;
  const found = follow(ref, 'spec.infrastructure.parametersRef', gateway.metadata.namespace, lookup);
  if (!found.ok) return found;
  const { settings, problems } = readData(found.configMap, found.id, base.settings);
  const sources = [...base.sources, found.id];
  problems.push(...requestAboveLimit(settings, sources));
  return problems.length ? { ok: false, message: problems.join('; ') } : { ok: true, settings, sources };
}

function compact(r: Record<string, string | undefined>): { cpu?: string; memory?: string } {
  const out: { cpu?: string; memory?: string } = {};
  if (r.cpu !== undefined) out.cpu = r.cpu;
  if (r.memory !== undefined) out.memory = r.memory;
  return out;
}
