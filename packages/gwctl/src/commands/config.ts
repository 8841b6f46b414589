// `gwctl config all` and `gwctl config backends`: read /config_dump (or a saved dump with
// --file) and render it as tables, JSON or YAML.
import { readFile } from 'node:fs/promises';
import { yaml } from '@tollgate/api';
import { adminJson } from '../admin-client.js';
import { checkBackendsBody, checkDump, type ConfigDump, type DumpBackend, type DumpMatch, type DumpPolicy } from '../config-dump.js';
import { GwctlError, describe, usage } from '../errors.js';
import { write, type Io } from '../io.js';
import { missingWorkerWarnings } from '../missing-workers.js';
import { table } from '../table.js';
import { gatewayTarget, withTarget, type TargetFlags } from '../target/resolve.js';

export type OutputFormat = 'table' | 'json' | 'yaml';
/** `config backends` also has `wide`: the §2.7 columns, then requests in flight and the ejection. */
export type BackendsFormat = OutputFormat | 'wide';

export interface ConfigFlags extends TargetFlags {
  file?: string;
  output?: OutputFormat;
}

export interface BackendsFlags extends TargetFlags {
  file?: string;
  output?: BackendsFormat;
}

async function loadDump(ref: string | undefined, flags: ConfigFlags, io: Io): Promise<ConfigDump> {
  if (flags.file !== undefined) {
    if (ref !== undefined || flags.local) throw usage(`--file renders a saved dump; give no ${ref ?? '--local'} with it`);
    let text: string;
    try {
      text = await readFile(flags.file, 'utf8');
    } catch (err) {
      throw new GwctlError('TG_GWCTL_INPUT', `cannot read ${flags.file}: ${describe(err)}`, { cause: err });
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new GwctlError('TG_GWCTL_INPUT', `${flags.file} is not JSON: ${describe(err)}`, { cause: err });
    }
    return checkDump(value, flags.file);
  }
  return withTarget(gatewayTarget(ref, flags, io), async (t) => checkDump(await adminJson(t, '/config_dump'), `the /config_dump answer of ${t.description}`, 'TG_GWCTL_ADMIN_ERROR'));
}

function formatted(value: unknown, format: OutputFormat): string | null {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  if (format === 'yaml') return yaml().stringify(value);
  return null;
}

function matchText(m: DumpMatch): string {
  const p = m.path;
  const path = !p ? '/' : p.type === 'Exact' ? p.value : p.type === 'PathPrefix' ? `${p.value === '/' ? '/' : p.value}*` : `~${p.value}`;
  const extra = [m.headers?.length ? `${m.headers.length} header${m.headers.length > 1 ? 's' : ''}` : '', m.queryParams?.length ? `${m.queryParams.length} query` : '']
    .filter(Boolean)
    .join(', ');
  return `${m.method ? `${m.method} ` : ''}${path}${extra ? ` (+${extra})` : ''}`;
}

function rateLimitText(entry: unknown): string {
  const e = entry as { kind?: string; requests?: number; tokens?: number; burst?: number; unit?: string; by?: { type?: string; name?: string } };
  const per = e.by?.type ? ` per ${e.by.type}${e.by.name ? ` ${e.by.name}` : ''}` : '';
  if (e.kind === 'tokens' || e.tokens !== undefined) return `${e.tokens} tokens/${e.unit}${per}`;
  return `${e.requests} requests/${e.unit}${e.burst ? ` (+${e.burst} burst)` : ''}${per}`;
}

/** `localRateLimit: 10 requests/Minutes (+5 burst), 5000 tokens/Days per Consumer; remoteRateLimit: ...` */
export function policyText(p: DumpPolicy['policy']): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(p)) {
    if (value === null || value === undefined) continue;
    if (key === 'localRateLimit' && Array.isArray(value)) parts.push(`${key}: ${value.map(rateLimitText).join(', ')}`);
    else if (key === 'remoteRateLimit' && typeof value === 'object') {
      const r = value as { service?: string; domain?: string; descriptors?: unknown[] };
      parts.push(`${key}: ${r.service ?? '?'} domain ${r.domain ?? '?'}, ${r.descriptors?.length ?? 0} descriptor(s)`);
    } else if (key === 'transformation' && typeof value === 'object') {
      parts.push(`${key}: ${transformationText(value)}`);
    } else {
      const auth = authText(key, value as Record<string, unknown>);
      parts.push(auth ? `${key}: ${auth}` : key);
    }
  }
  return parts.join('; ') || 'none';
}

interface EditsDump {
  readonly set?: readonly unknown[];
  readonly add?: readonly unknown[];
  readonly remove?: readonly unknown[];
}
interface TransformationDump {
  readonly request?: { readonly headers?: EditsDump | null; readonly body?: EditsDump | null };
  readonly response?: { readonly headers?: EditsDump | null };
}

/** `request 3 headers, 2 body fields; response 1 header` (the edits of each part, counted). */
function transformationText(t: TransformationDump): string {
  const count = (e: EditsDump | null | undefined) => (e?.set?.length ?? 0) + (e?.add?.length ?? 0) + (e?.remove?.length ?? 0);
  const request = [count(t.request?.headers) ? plural(count(t.request?.headers), 'header') : '', count(t.request?.body) ? plural(count(t.request?.body), 'body field') : ''].filter(Boolean);
  const response = count(t.response?.headers);
  return [request.length ? `request ${request.join(', ')}` : '', response ? `response ${plural(response, 'header')}` : ''].filter(Boolean).join('; ') || 'no edits';
}

const plural = (n: unknown, word: string) => `${typeof n === 'number' ? n : '?'} ${word}${n === 1 ? '' : 's'}`;

/** The authentication kinds as /config_dump summarizes them (proxy auth/summary.ts), and cors, csrf, directResponse and extProc. */
function authText(key: string, v: Record<string, unknown>): string | null {
  switch (key) {
    case 'apiKey':
      return plural(v.consumers, 'consumer');
    case 'basicAuth':
      return `${plural(v.users, 'user')}, realm ${String(v.realm)}`;
    case 'jwt':
      return Array.isArray(v.providers) ? `providers ${v.providers.map((p) => String((p as { name?: unknown }).name)).join(', ')}` : null;
    case 'authorization':
      return Array.isArray(v.rules) ? plural(v.rules.length, 'rule') : null;
    case 'extAuthz':
      return `${String(v.service)} (${String(v.protocol)})`;
    case 'cors':
      return Array.isArray(v.allowOrigins) ? `origins ${v.allowOrigins.join(', ') || '(none)'}${v.allowCredentials === true ? ', credentials' : ''}` : null;
    case 'csrf':
      return Array.isArray(v.additionalOrigins) ? (v.additionalOrigins.length ? `own origin, ${v.additionalOrigins.join(', ')}` : 'own origin') : null;
    case 'directResponse':
      return `status ${String(v.status)}`;
    case 'extProc':
      return `${String(v.service)} (request ${String(v.requestHeaderMode)}/${String(v.requestBodyMode)}, response ${String(v.responseHeaderMode)}/${String(v.responseBodyMode)}, ${String(v.failureMode)})`;
    default:
      return null;
  }
}

export function renderAll(d: ConfigDump): string {
  const source = d.source ? (d.source.kind === 'file' ? `file ${d.source.path}` : `${d.source.kind} ${d.source.gateway ?? d.source.path ?? ''}`.trim()) : 'unknown source';
  const out: string[] = [`Config ${d.version ?? '(no version)'} from ${source}${d.loadedAt ? `, loaded ${d.loadedAt}` : ''}\n`];
  if (d.listeners) {
    out.push(
      'LISTENERS\n' +
        table(
          ['NAME', 'BIND', 'PROTOCOL', 'HOSTNAME', 'ROUTES'],
          d.listeners.map((l) => [l.name, l.bind ?? '', l.protocol ?? '', l.hostname ?? '*', String(l.routes?.length ?? 0)]),
        ),
    );
  }
  out.push(
    'ROUTES\n' +
      (d.routes.length
        ? table(
            ['NAME', 'HOSTNAMES', 'MATCHES', 'FILTERS', 'BACKENDS'],
            d.routes.map((r) => [
              r.name,
              r.hostnames?.length ? r.hostnames.join(',') : '*',
              (r.matches?.length ? r.matches : [{}]).map(matchText).join(', '),
              r.filters?.map((f) => f.type).join(',') || '-',
              r.backends?.map((b) => (b.weight !== undefined && (r.backends?.length ?? 0) > 1 ? `${b.name} (weight ${b.weight})` : b.name)).join(', ') || '-',
            ]),
          )
        : 'No routes.\n'),
  );
  out.push(
    'BACKENDS\n' +
      (d.backends.length
        ? table(
            ['TYPE', 'NAME', 'NAMESPACE', 'ENDPOINTS'],
            d.backends.map((b) => [b.type, b.name, b.namespace || '-', String(b.endpoints?.length ?? 0)]),
          )
        : 'No backends.\n'),
  );
  out.push(
    'POLICIES\n' +
      (d.policies.length
        ? table(
            ['TARGET', 'LEVEL', 'POLICY'],
            d.policies.map((p) => [`${p.target.kind}/${p.target.name}`, p.level, policyText(p.policy)]),
          )
        : 'No policies.\n'),
  );
  return out.join('\n');
}

/**
 * The backend health table of the interface spec §2.7; `wide` adds INFLIGHT (requests in
 * flight) and EJECTED (until when the endpoint is avoided after a failed connect, `-` when it
 * is not; `?` for what a proxy did not report). Backends cooling down after a 429 or 503 follow
 * in a table of their own (none: nothing more is printed, and the §2.7 table stands alone).
 */
export function renderBackends(backends: readonly DumpBackend[], wide = false): string {
  const rows = backends.flatMap((b) =>
    (b.endpoints ?? []).map((e) => {
      const row = [b.type, b.name, b.namespace || '-', e.address, e.health.toFixed(2), String(e.requests), `${e.latencyMs.toFixed(2)}ms`];
      if (wide) row.push(e.inFlight === undefined ? '?' : String(e.inFlight), e.ejectedUntil === undefined ? '?' : (e.ejectedUntil ?? '-'));
      return row;
    }),
  );
  if (!rows.length) return 'No backends.\n';
  const header = ['TYPE', 'NAME', 'NAMESPACE', 'ENDPOINT', 'HEALTH', 'REQUESTS', 'LATENCY'];
  const health = table(wide ? [...header, 'INFLIGHT', 'EJECTED'] : header, rows);
  const cooling = backends.filter((b) => b.coolDown);
  if (!cooling.length) return health;
  return `${health}\nCOOLING DOWN\n${table(
    ['TYPE', 'NAME', 'NAMESPACE', 'REMAINING', 'REASON'],
    cooling.map((b) => [b.type, b.name, b.namespace || '-', `${b.coolDown!.remainingSeconds}s`, b.coolDown!.reason]),
  )}`;
}

export async function configAll(ref: string | undefined, flags: ConfigFlags, io: Io): Promise<void> {
  const dump = await loadDump(ref, flags, io);
  write(io.stdout, formatted(dump, flags.output ?? 'table') ?? renderAll(dump));
}

/** A proxy's /backends (its live endpoint state), or the backends of a saved /config_dump. */
async function loadBackends(ref: string | undefined, flags: BackendsFlags, io: Io): Promise<readonly DumpBackend[]> {
  if (flags.file !== undefined) return (await loadDump(ref, { ...flags, output: undefined }, io)).backends;
  return withTarget(gatewayTarget(ref, flags, io), async (t) => {
    const body = checkBackendsBody(await adminJson(t, '/backends'), `the /backends answer of ${t.description}`);
    io.stderr.write(missingWorkerWarnings(t.description, body.missingWorkers, 'the endpoint counts of that thread'));
    return body.backends;
  });
}

export async function configBackends(ref: string | undefined, flags: BackendsFlags, io: Io): Promise<void> {
  const found = await loadBackends(ref, flags, io);
  const format = flags.output ?? 'table';
  const backends = found.map((b) => ({ type: b.type, name: b.name, namespace: b.namespace ?? '', coolDown: b.coolDown ?? null, endpoints: b.endpoints ?? [] }));
  const text = format === 'table' || format === 'wide' ? renderBackends(found, format === 'wide') : formatted(backends, format);
  write(io.stdout, text ?? '');
}
