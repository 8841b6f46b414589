// The controller run as its real binary, out of cluster, for the e2e suites: its JSON log
// lines are the event stream tests wait on (listening addresses, caches synced, leadership,
// reconciles); /metrics is read over HTTP. Also: a kubeconfig with the chart ServiceAccount's
// token, and kubectl watches that resolve when an object reaches a state.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART, CHART_RELEASE, SYSTEM_NAMESPACE } from './lib/chart.js';
import type { Cluster } from './lib/cluster.js';
import { run } from './lib/exec.js';
import { LoggedProcess } from './lib/logged-process.js';
import { REPO_ROOT } from './lib/tools.js';

export const CONTROLLER_BIN = join(REPO_ROOT, 'packages/controller/bin/tollgate-controller.js');

export type { LogLine } from './lib/logged-process.js';

/** A kubeconfig that authenticates as the ServiceAccount, with a token from the TokenRequest API. */
export async function serviceAccountKubeconfig(cluster: Cluster, namespace: string, serviceAccount: string, file: string): Promise<string> {
  const token = (await run(cluster.tools.kubectl, ['create', 'token', serviceAccount, '-n', namespace, '--duration=2h'], { env: cluster.env })).trim();
  const admin = JSON.parse(await run(cluster.tools.kubectl, ['config', 'view', '--raw', '-o', 'json'], { env: cluster.env })) as {
    clusters: { cluster: { server: string; 'certificate-authority': string } }[];
  };
  const c = admin.clusters[0]!.cluster;
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'e2e', cluster: { server: c.server, 'certificate-authority': c['certificate-authority'] } }],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: serviceAccount } }],
    'current-context': 'e2e',
  };
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  return file;
}

/**
 * The chart installed with helm in tollgate-system (CRDs, RBAC, GatewayClass) and the
 * controller binary started out of cluster with the chart ServiceAccount's token, so the
 * chart's RBAC is what a suite exercises; resolves once every watched kind has synced.
 */
export async function startChartController(cluster: Cluster, helmArgs: string[] = []): Promise<ControllerProcess> {
  await run(cluster.tools.helm, ['install', CHART_RELEASE, CHART, '-n', SYSTEM_NAMESPACE, '--create-namespace', ...helmArgs], { env: cluster.env });
  return startAsChart(cluster, 'controller');
}

/** `helm install` of the chart into tollgate-system (its defaults: RBAC, admission and network policies), and `namespaces` made. */
export async function installChart(cluster: Cluster, namespaces: readonly string[] = []): Promise<void> {
  await run(cluster.tools.helm, ['install', CHART_RELEASE, CHART, '-n', SYSTEM_NAMESPACE, '--create-namespace'], { env: cluster.env });
  for (const ns of namespaces) await run(cluster.tools.kubectl, ['create', 'namespace', ns], { env: cluster.env });
}

/**
 * The controller binary as the chart's ServiceAccount (a fresh token, so a verb the chart's
 * RBAC lacks, or a write its admission policy refuses, fails as it would in a pod); resolves
 * once every cache synced.
 */
export async function startAsChart(cluster: Cluster, name: string, extraArgs: string[] = []): Promise<ControllerProcess> {
  const kubeconfig = await serviceAccountKubeconfig(cluster, SYSTEM_NAMESPACE, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-ctl-')), 'kubeconfig'));
  const controller = await ControllerProcess.start(name, cluster, kubeconfig, extraArgs);
  await controller.synced();
  return controller;
}

export class ControllerProcess extends LoggedProcess {
  admin = '';
  metricsAddr = '';
  health = '';

  static async start(name: string, cluster: Cluster, kubeconfig: string, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ControllerProcess> {
    const defaults = [
      `--kubeconfig=${kubeconfig}`,
      '--admin-addr=127.0.0.1:0',
      '--metrics-addr=127.0.0.1:0',
      '--health-addr=127.0.0.1:0',
      '--snapshot-addr=127.0.0.1:0',
      '--log-level=info,tollgate/translator=debug,gateway-controller=debug',
    ];
    // A flag in extraArgs replaces its default (the controller refuses a flag given twice).
    const flagOf = (a: string) => a.split('=')[0]!;
    const args = [...defaults.filter((d) => !extraArgs.some((e) => flagOf(e) === flagOf(d))), ...extraArgs];
    const child = spawn(process.execPath, [CONTROLLER_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: cluster.dir, ...env } });
    const p = new ControllerProcess(name, child, join(cluster.dir, `${name}.log`));
    const addr = (what: string) => p.waitForLog((l) => l.msg === `${what} listening`, 30_000).then((l) => String(l.address));
    [p.admin, p.metricsAddr, p.health] = await Promise.all([addr('admin'), addr('metrics'), addr('health')]);
    return p;
  }

  /** Every watched kind listed once. */
  async synced(): Promise<void> {
    await Promise.all(WATCHED_KINDS.map((k) => this.waitForLog((l) => l.msg === 'cache synced' && l.kind === k)));
  }

  async metrics(): Promise<string> {
    const res = await fetch(`http://${this.metricsAddr}/metrics`);
    return res.text();
  }

  /** Sum of a metric's samples whose labels include `labels`. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return sumMetric(await this.metrics(), name, labels);
  }
}

/** The kinds the controller watches: `synced()` waits for the first list of each. */
export const WATCHED_KINDS = [
  'GatewayClass', 'Gateway', 'HTTPRoute', 'GRPCRoute', 'TLSRoute', 'ListenerSet', 'ReferenceGrant', 'BackendTLSPolicy',
  'GatewayPolicy', 'Backend', 'Service', 'EndpointSlice', 'Namespace', 'Secret', 'ConfigMap',
] as const;

export function sumMetric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map<string, string>();
    for (const x of (m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have.set(x[1]!, x[2]!);
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) sum += Number(m[4]);
  }
  return sum;
}

/**
 * Watches one object with `kubectl get --watch -o json` and resolves with the first version
 * that satisfies `predicate` (the current version counts). A missing object is waited for.
 */
export async function waitForObject<T = Record<string, unknown>>(
  cluster: Cluster,
  resource: string,
  name: string,
  namespace: string | undefined,
  predicate: (obj: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  return waitForObjectWhere(cluster, resource, `metadata.name=${name}`, namespace, predicate, timeoutMs);
}

/** As waitForObject, for the first object matching a field selector (e.g. an Event's reason). */
export async function waitForObjectWhere<T = Record<string, unknown>>(
  cluster: Cluster,
  resource: string,
  fieldSelector: string,
  namespace: string | undefined,
  predicate: (obj: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const args = ['get', resource, `--field-selector=${fieldSelector}`, '-o', 'json', '--watch'];
  if (namespace) args.push('-n', namespace);
  const child = spawn(cluster.tools.kubectl, args, { env: cluster.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let last: unknown;
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    return await new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${resource} ${fieldSelector}: condition not reached within ${timeoutMs} ms; last seen:\n${JSON.stringify(last, null, 2)}\n${stderr}`)), timeoutMs);
      const parser = new JsonStream((doc) => {
        // The first answer may be a List of the current items; then single objects.
        const list = doc as { kind?: string; items?: unknown[] };
        const items: unknown[] = list.kind?.endsWith('List') ? (list.items ?? []) : [doc];
        for (const item of items) {
          last = item;
          if (predicate(item as T)) {
            clearTimeout(timer);
            resolve(item as T);
          }
        }
      });
      child.stdout.on('data', (d: Buffer) => parser.push(d.toString()));
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`kubectl ${args.join(' ')} exited (${code}) before the condition was reached:\n${stderr}\nlast seen: ${JSON.stringify(last)}`));
      });
    });
  } finally {
    child.kill('SIGKILL');
  }
}

/** Splits a stream of concatenated JSON documents. */
class JsonStream {
  #buf = '';
  #depth = 0;
  #inString = false;
  #escape = false;
  #start = -1;
  #pos = 0;
  constructor(private readonly onDoc: (doc: unknown) => void) {}
  push(text: string): void {
    this.#buf += text;
    for (; this.#pos < this.#buf.length; this.#pos++) {
      const ch = this.#buf[this.#pos]!;
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (ch === '\\') this.#escape = true;
        else if (ch === '"') this.#inString = false;
        continue;
      }
      if (ch === '"') this.#inString = true;
      else if (ch === '{') {
        if (this.#depth++ === 0) this.#start = this.#pos;
      } else if (ch === '}' && --this.#depth === 0) {
        const doc = this.#buf.slice(this.#start, this.#pos + 1);
        this.#buf = this.#buf.slice(this.#pos + 1);
        this.#pos = -1;
        this.onDoc(JSON.parse(doc));
      }
    }
  }
}
