// The parts of the proxy's /config_dump body gwctl reads (docs/admin-api.md), and a shape
// check for dumps read from a file, so a wrong file is one clear error rather than a crash.
import { GwctlError, type ErrorCode } from './errors.js';
import { checkMissingWorkers, type MissingWorker } from './missing-workers.js';

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
  /** Requests in flight (absent in dumps of proxies that do not report it). */
  readonly inFlight?: number;
  /** ISO time until which the endpoint is ejected after a failed connect; null when it is not. */
  readonly ejectedUntil?: string | null;
}

/** A backend passed over after a 429 or 503 (docs/retries-failover.md). */
export interface DumpCoolDown {
  readonly until: string;
  readonly remainingSeconds: number;
  readonly reason: string;
}

export interface DumpBackend {
  readonly type: string;
  readonly name: string;
  readonly namespace?: string;
  /** Null (or absent, from proxies that do not report it) when the backend is not cooling down. */
  readonly coolDown?: DumpCoolDown | null;
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

/** A checker of one dump: each method throws the first problem it finds, naming its path. */
class Checker {
  constructor(readonly fail: (what: string) => GwctlError) {}
  object(v: unknown, path: string): Record<string, unknown> {
    if (!isObject(v)) throw this.fail(`${path} must be an object`);
    return v;
  }
  string(v: unknown, path: string, optional = false): void {
    if (optional && (v === undefined || v === null)) return;
    if (typeof v !== 'string') throw this.fail(`${path} must be a string`);
  }
  number(v: unknown, path: string, optional = false): void {
    if (optional && (v === undefined || v === null)) return;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw this.fail(`${path} must be a number`);
  }
  /** The items of an array (none when optional and absent). */
  array(v: unknown, path: string, optional = false): unknown[] {
    if (optional && (v === undefined || v === null)) return [];
    if (!Array.isArray(v)) throw this.fail(`${path} must be an array`);
    return v;
  }
}

function checkBackends(list: unknown[], c: Checker): void {
  list.forEach((b, i) => {
    if (!isObject(b) || typeof b.name !== 'string') throw c.fail(`backends[${i}].name must be a string`);
    if (b.endpoints !== undefined && !Array.isArray(b.endpoints)) throw c.fail(`backends[${i}].endpoints must be an array`);
    ((b.endpoints as unknown[] | undefined) ?? []).forEach((e, j) => {
      if (!isObject(e) || typeof e.address !== 'string') throw c.fail(`backends[${i}].endpoints[${j}].address must be a string`);
      for (const k of ['health', 'requests', 'latencyMs']) c.number(e[k], `backends[${i}].endpoints[${j}].${k}`);
      c.number(e.inFlight, `backends[${i}].endpoints[${j}].inFlight`, true);
      c.string(e.ejectedUntil, `backends[${i}].endpoints[${j}].ejectedUntil`, true);
    });
    c.string(b.type, `backends[${i}].type`);
    c.string(b.namespace, `backends[${i}].namespace`, true);
    if (b.coolDown !== undefined && b.coolDown !== null) {
      const cd = c.object(b.coolDown, `backends[${i}].coolDown`);
      c.string(cd.until, `backends[${i}].coolDown.until`);
      c.number(cd.remainingSeconds, `backends[${i}].coolDown.remainingSeconds`);
      c.string(cd.reason, `backends[${i}].coolDown.reason`);
    }
  });
}

/** Checks the body of the admin server's /backends answer (the `backends` of a dump, and its version). */
export function checkBackendsBody(value: unknown, where: string): { readonly version?: string; readonly backends: readonly DumpBackend[]; readonly missingWorkers: readonly MissingWorker[] } {
  const c = new Checker((what) => new GwctlError('TG_GWCTL_ADMIN_ERROR', `${where} is not a /backends body: ${what}`));
  if (!isObject(value)) throw c.fail('expected a JSON object');
  if (!Array.isArray(value.backends)) throw c.fail('"backends" must be an array');
  c.string(value.version, 'version', true);
  checkBackends(value.backends, c);
  const missingWorkers = checkMissingWorkers(value.missingWorkers, (what) => {
    throw c.fail(what);
  });
  return { ...(value as { version?: string; backends: DumpBackend[] }), missingWorkers };
}

/**
 * Checks every field gwctl renders, so a wrong file or a wrong answer is one clear error
 * rather than a crash; `where` names the source in the message, `code` whose fault a bad one
 * is (a file given with --file, or the admin server's answer).
 */
export function checkDump(value: unknown, where: string, code: ErrorCode = 'TG_GWCTL_INPUT'): ConfigDump {
  const c = new Checker((what) => new GwctlError(code, `${where} is not a /config_dump body: ${what}`));
  if (!isObject(value)) throw c.fail('expected a JSON object');
  for (const key of ['routes', 'backends', 'policies'] as const) {
    if (!Array.isArray(value[key])) throw c.fail(`"${key}" must be an array`);
  }
  if (value.listeners !== undefined && !Array.isArray(value.listeners)) throw c.fail('"listeners" must be an array');
  c.string(value.version, 'version', true);
  c.string(value.loadedAt, 'loadedAt', true);
  if (value.source !== undefined && value.source !== null) {
    const src = c.object(value.source, 'source');
    c.string(src.kind, 'source.kind');
    c.string(src.path, 'source.path', true);
    c.string(src.gateway, 'source.gateway', true);
  }
  c.array(value.listeners, 'listeners', true).forEach((l, i) => {
    const o = c.object(l, `listeners[${i}]`);
    c.string(o.name, `listeners[${i}].name`);
    for (const k of ['bind', 'protocol', 'hostname']) c.string(o[k], `listeners[${i}].${k}`, true);
    c.array(o.routes, `listeners[${i}].routes`, true);
  });
  (value.routes as unknown[]).forEach((r, i) => {
    if (!isObject(r) || typeof r.name !== 'string') throw c.fail(`routes[${i}].name must be a string`);
    c.array(r.hostnames, `routes[${i}].hostnames`, true).forEach((h, j) => c.string(h, `routes[${i}].hostnames[${j}]`));
    c.array(r.matches, `routes[${i}].matches`, true).forEach((m, j) => {
      const at = `routes[${i}].matches[${j}]`;
      const o = c.object(m, at);
      if (o.path !== undefined && o.path !== null) {
        const path = c.object(o.path, `${at}.path`);
        c.string(path.type, `${at}.path.type`);
        c.string(path.value, `${at}.path.value`);
      }
      c.string(o.method, `${at}.method`, true);
      c.array(o.headers, `${at}.headers`, true);
      c.array(o.queryParams, `${at}.queryParams`, true);
    });
    c.array(r.filters, `routes[${i}].filters`, true).forEach((f, j) => c.string(c.object(f, `routes[${i}].filters[${j}]`).type, `routes[${i}].filters[${j}].type`));
    c.array(r.backends, `routes[${i}].backends`, true).forEach((b, j) => {
      const o = c.object(b, `routes[${i}].backends[${j}]`);
      c.string(o.name, `routes[${i}].backends[${j}].name`);
      c.number(o.weight, `routes[${i}].backends[${j}].weight`, true);
    });
  });
  checkBackends(value.backends as unknown[], c);
  (value.policies as unknown[]).forEach((p, i) => {
    if (!isObject(p) || !isObject(p.target) || !isObject(p.policy)) throw c.fail(`policies[${i}] must have "target" and "policy" objects`);
    c.string(p.target.kind, `policies[${i}].target.kind`);
    c.string(p.target.name, `policies[${i}].target.name`);
    c.string(p.level, `policies[${i}].level`);
    const local = p.policy.localRateLimit;
    if (local !== undefined && local !== null) c.array(local, `policies[${i}].policy.localRateLimit`).forEach((e, j) => c.object(e, `policies[${i}].policy.localRateLimit[${j}]`));
  });
  return value as unknown as ConfigDump;
}
