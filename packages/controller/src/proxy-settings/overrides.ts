// Per-Gateway proxy settings, read from `spec.infrastructure.annotations` (applied over the
// parameters ConfigMaps, parameters.ts, which are the documented way):
//
//   tollgate.dev/replicas        number of proxy pods (0-100)
//   tollgate.dev/cpu-request     e.g. 250m
//   tollgate.dev/memory-request  e.g. 256Mi
//   tollgate.dev/cpu-limit       e.g. 1 (no CPU limit unless set)
//   tollgate.dev/memory-limit    e.g. 1Gi
//
// Each value is checked here, before anything reaches the API server; a bad one is reported
// (naming the annotation, the value and a good example) and the default is used instead. An
// unknown tollgate.dev/ key is reported too: it is almost always a typo.
//
// `tollgate.dev/image` is not read here: what the proxies run is the cluster admin's choice,
// decided with the parameters (parameters.ts, image-policy.ts), and a Gateway naming an image
// the admin did not allow is refused rather than quietly given the default.
export interface ProxyResources {
  readonly requests: { readonly cpu?: string; readonly memory?: string };
  readonly limits: { readonly cpu?: string; readonly memory?: string };
}

export interface ProxySettings {
  readonly replicas: number;
  readonly resources: ProxyResources;
  /** Set only when the GatewayClass's parameters (or an allowed Gateway choice) replace the controller's --proxy-image. */
  readonly image?: string;
  /**
   * Process settings of the proxies (the bounds of PROXY_PROCESS_PARAMETERS, as `config:` of a
   * standalone file names them), from the parameters ConfigMaps; rendered into TOLLGATE_SETTINGS.
   */
  readonly process?: Readonly<Record<string, string | number>>;
}

/** The settings with `image` and `process` only where set (renders stay byte for byte the same). */
export function proxySettings(replicas: number, resources: ProxyResources, image: string | undefined, process: ProxySettings['process']): ProxySettings {
  return { replicas, resources, ...(image === undefined ? {} : { image }), ...(process && Object.keys(process).length ? { process } : {}) };
}

export const ANNOTATION_PREFIX = 'tollgate.dev/';
export const MAX_REPLICAS = 100;

const RESOURCE_KEYS = {
  'cpu-request': ['requests', 'cpu', '250m'],
  'memory-request': ['requests', 'memory', '256Mi'],
  'cpu-limit': ['limits', 'cpu', '1'],
  'memory-limit': ['limits', 'memory', '1Gi'],
} as const;

/** The annotation of the proxy image (read with the parameters, not here). */
export const IMAGE_ANNOTATION = `${ANNOTATION_PREFIX}image`;

const KNOWN = ['replicas', ...Object.keys(RESOURCE_KEYS), 'image'];
/** The tollgate.dev/ annotations a Gateway may set: its proxies' settings. */
export const SETTING_ANNOTATIONS: readonly string[] = KNOWN.map((k) => `${ANNOTATION_PREFIX}${k}`);

// A Kubernetes quantity as written by people: a decimal number and an optional suffix.
const QUANTITY = /^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const SCALE: Readonly<Record<string, number>> = {
  '': 1, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** The value of a quantity, or undefined when it is not one. */
export function quantityValue(text: string): number | undefined {
  const m = QUANTITY.exec(text);
  return m ? Number(m[1]) * SCALE[m[2] ?? '']! : undefined;
}

export function readOverrides(annotations: Readonly<Record<string, string>> | undefined, defaults: ProxySettings): { settings: ProxySettings; problems: string[] } {
  const problems: string[] = [];
  let replicas = defaults.replicas;
  const requests: Record<string, string | undefined> = { ...defaults.resources.requests };
  const limits: Record<string, string | undefined> = { ...defaults.resources.limits };
  const field = (key: string) => `spec.infrastructure.annotations["${ANNOTATION_PREFIX}${key}"]`;

  for (const [full, value] of Object.entries(annotations ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!full.startsWith(ANNOTATION_PREFIX)) continue;
    const key = full.slice(ANNOTATION_PREFIX.length);
    if (key === 'replicas') {
      if (/^[0-9]{1,3}$/.test(value) && Number(value) <= MAX_REPLICAS) replicas = Number(value);
      else problems.push(`${field(key)} "${value}" is not a whole number from 0 to ${MAX_REPLICAS}; e.g. "2" (using ${defaults.replicas})`);
    } else if (key === 'image') {
      continue;
    } else if (key in RESOURCE_KEYS) {
      const [kind, resource, example] = RESOURCE_KEYS[key as keyof typeof RESOURCE_KEYS];
      const v = quantityValue(value);
      const target = kind === 'requests' ? requests : limits;
      if (v === undefined || v === 0) problems.push(`${field(key)} "${value}" is not a positive quantity; e.g. "${example}" (using ${target[resource] ?? 'none'})`);
      else target[resource] = value;
    } else {
      problems.push(`${field(key)} is not a setting of the proxies; the settings are ${SETTING_ANNOTATIONS.join(', ')}`);
    }
  }

  // The API server refuses a pod whose request exceeds its limit; say so here instead, and
  // keep the pair that was valid before the overrides.
  for (const resource of ['cpu', 'memory'] as const) {
    const req = requests[resource];
    const lim = limits[resource];
    if (req !== undefined && lim !== undefined && quantityValue(req)! > quantityValue(lim)!) {
      problems.push(`${resource} request ${req} is above its limit ${lim}: raise ${field(`${resource}-limit`)} or lower ${field(`${resource}-request`)} (using the defaults for ${resource})`);
      requests[resource] = defaults.resources.requests[resource];
      limits[resource] = defaults.resources.limits[resource];
    }
  }
  const resources = { requests: compact(requests), limits: compact(limits) };
  return { settings: proxySettings(replicas, resources, defaults.image, defaults.process), problems };
}

function compact(r: Record<string, string | undefined>): { cpu?: string; memory?: string } {
  const out: { cpu?: string; memory?: string } = {};
  if (r.cpu !== undefined) out.cpu = r.cpu;
  if (r.memory !== undefined) out.memory = r.memory;
  return out;
}
