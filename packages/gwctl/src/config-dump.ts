// The parts of the proxy's /config_dump body gwctl reads (docs/admin-api.md), and a shape
// check for dumps read from a file, so a wrong file is one clear error rather than a crash.
import { GwctlError } from './errors.js';

export interface DumpMatch {
  readonly path?: { readonly type: string; readonly value: string };
  readonly method?: string | null;
  readonly headers?: readonly unknown[];
  readonly queryParams?: readonly unknown[];
}

export interface DumpRoute {
  readonly name: string;
  readonly listener?: string;
  readonly hostnames?: readonly string[];
  readonly matches?: readonly DumpMatch[];
  readonly filters?: readonly { readonly type: string }[];
  readonly backends?: readonly { readonly name: string; readonly weight?: number }[];
}

export interface DumpEndpoint {
  readonly address: string;
  readonly health: number;
  readonly requests: number;
  readonly latencyMs: number;
}

export interface DumpBackend {
  readonly type: string;
  readonly name: string;
  readonly namespace?: string;
  readonly endpoints?: readonly DumpEndpoint[];
}

export interface DumpPolicy {
  readonly target: { readonly kind: string; readonly name: string };
  readonly level: string;
  readonly policy: Record<string, unknown>;
}

export interface ConfigDump {
  readonly version?: string;
  readonly source?: { readonly kind: string; readonly path?: string; readonly gateway?: string };
  readonly loadedAt?: string;
  readonly listeners?: readonly { readonly name: string; readonly bind?: string; readonly protocol?: string; readonly hostname?: string | null; readonly routes?: readonly string[] }[];
  readonly routes: readonly DumpRoute[];
  readonly backends: readonly DumpBackend[];
  readonly policies: readonly DumpPolicy[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks the fields gwctl renders; `where` names the source in the message. */
export function checkDump(value: unknown, where: string): ConfigDump {
  const fail = (what: string) => new GwctlError('TG_GWCTL_INPUT', `${where} is not a /config_dump body: ${what}`);
  if (!isObject(value)) throw fail('expected a JSON object');
  for (const key of ['routes', 'backends', 'policies'] as const) {
    if (!Array.isArray(value[key])) throw fail(`"${key}" must be an array`);
  }
  if (value.listeners !== undefined && !Array.isArray(value.listeners)) throw fail('"listeners" must be an array');
  (value.routes as unknown[]).forEach((r, i) => {
    if (!isObject(r) || typeof r.name !== 'string') throw fail(`routes[${i}].name must be a string`);
  });
  (value.backends as unknown[]).forEach((b, i) => {
    if (!isObject(b) || typeof b.name !== 'string') throw fail(`backends[${i}].name must be a string`);
    if (b.endpoints !== undefined && !Array.isArray(b.endpoints)) throw fail(`backends[${i}].endpoints must be an array`);
    ((b.endpoints as unknown[] | undefined) ?? []).forEach((e, j) => {
      if (!isObject(e) || typeof e.address !== 'string') throw fail(`backends[${i}].endpoints[${j}].address must be a string`);
      for (const k of ['health', 'requests', 'latencyMs']) {
        if (typeof e[k] !== 'number') throw fail(`backends[${i}].endpoints[${j}].${k} must be a number`);
      }
    });
  });
  (value.policies as unknown[]).forEach((p, i) => {
    if (!isObject(p) || !isObject(p.target) || !isObject(p.policy)) throw fail(`policies[${i}] must have "target" and "policy" objects`);
  });
  return value as unknown as ConfigDump;
}
