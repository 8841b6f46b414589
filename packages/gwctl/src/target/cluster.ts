// Cluster targets: load the kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config or the
// in-cluster service account), find a Running and Ready pod by label, and port-forward to
// its admin port (and, for inject mode, to a listener port).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { GwctlError, describe } from '../errors.js';
import { requireGateway } from './gateway.js';
import { kubeApiError } from './kube-api-error.js';
import { PortForwarder } from './port-forward.js';
import { streamIdleMs, type Target } from './target.js';

export interface KubeOptions {
  readonly kubeconfig?: string | undefined;
  readonly context?: string | undefined;
  /** The process environment (KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST). */
  readonly env: NodeJS.ProcessEnv;
}

const NO_KUBECONFIG = 'set KUBECONFIG, pass --kubeconfig, or use --local for a standalone proxy';

export function loadKubeConfig(opts: KubeOptions): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (opts.kubeconfig) {
      if (!existsSync(opts.kubeconfig)) throw new GwctlError('TG_GWCTL_KUBECONFIG', `kubeconfig ${opts.kubeconfig} does not exist`);
      kc.loadFromFile(opts.kubeconfig);
    } else if (opts.env.KUBECONFIG) {
      const files = opts.env.KUBECONFIG.split(delimiter).filter((f) => f && existsSync(f));
      if (!files.length) throw new GwctlError('TG_GWCTL_KUBECONFIG', `no kubeconfig: none of the files in KUBECONFIG (${opts.env.KUBECONFIG}) exists; ${NO_KUBECONFIG}`);
      kc.loadFromFile(files[0]!);
      for (const f of files.slice(1)) {
        const more = new KubeConfig();
        more.loadFromFile(f);
        kc.mergeConfig(more);
      }
    } else {
      const home = opts.env.HOME ?? homedir();
      const file = join(home, '.kube', 'config');
      if (existsSync(file)) kc.loadFromFile(file);
      else if (opts.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
      else throw new GwctlError('TG_GWCTL_KUBECONFIG', `no kubeconfig found (${file} does not exist); ${NO_KUBECONFIG}`);
    }
  } catch (err) {
    if (err instanceof GwctlError) throw err;
    throw new GwctlError('TG_GWCTL_KUBECONFIG', `cannot load the kubeconfig: ${describe(err)}`, { cause: err });
  }
  if (opts.context) {
    if (!kc.getContextObject(opts.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new GwctlError('TG_GWCTL_KUBECONFIG', `context "${opts.context}" is not in the kubeconfig (contexts: ${known.join(', ') || 'none'})`);
    }
    kc.setCurrentContext(opts.context);
  } else if (!kc.getCurrentContext() || !kc.getCurrentCluster()) {
    throw new GwctlError('TG_GWCTL_KUBECONFIG', 'the kubeconfig has no current context; pass --context <name>');
  }
  if (!kc.getCurrentCluster()) throw new GwctlError('TG_GWCTL_KUBECONFIG', `context "${kc.getCurrentContext()}" names no cluster in the kubeconfig`);
  return kc;
}

/** The namespace of the current context, `default` when it sets none. */
export function contextNamespace(kc: KubeConfig): string {
  return kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
}

function isReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    !pod.metadata?.deletionTimestamp &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

function podState(pod: V1Pod): string {
  if (pod.metadata?.deletionTimestamp) return 'Terminating';
  const phase = pod.status?.phase ?? 'Unknown';
  return phase === 'Running' ? 'Running but not Ready' : phase;
}

/**
 * The Running and Ready pods (by name) matching `selector`, at least one. `none` says what to
 * check when no pod has the label at all.
 */
export async function findReadyPods(kc: KubeConfig, namespace: string, selector: string, what: string, none = 'wrong namespace? use -n'): Promise<V1Pod[]> {
  const api = kc.makeApiClient(CoreV1Api);
  let pods: V1Pod[];
  try {
    pods = (await api.listNamespacedPod({ namespace, labelSelector: selector })).items;
  } catch (err) {
    throw kubeApiError(`list pods in namespace "${namespace}" (server ${kc.getCurrentCluster()?.server})`, err);
  }
  pods.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  const ready = pods.filter(isReady);
  if (ready.length) return ready;
  if (!pods.length) {
    throw new GwctlError('TG_GWCTL_NO_POD', `no ${what} pod in namespace "${namespace}" has the label ${selector} (${none})`);
  }
  const states = pods
    .slice(0, 5)
    .map((p) => `${p.metadata?.name} ${podState(p)}`)
    .join(', ');
  throw new GwctlError('TG_GWCTL_NO_POD', `no Running and Ready ${what} pod in namespace "${namespace}" with the label ${selector} (${pods.length} found: ${states}${pods.length > 5 ? ', …' : ''})`);
}

/** The first Running and Ready pod (by name) matching `selector`. */
export async function findReadyPod(kc: KubeConfig, namespace: string, selector: string, what: string, none?: string): Promise<V1Pod> {
  return (await findReadyPods(kc, namespace, selector, what, none))[0]!;
}

export interface PodTargetOptions extends KubeOptions {
  readonly namespace?: string | undefined;
  /** The Gateway whose proxy pods are wanted: it must exist before its pods are looked for. */
  readonly gateway?: string | undefined;
  readonly selector: string;
  /** `gateway/public` or `controller`, for messages. */
  readonly what: string;
  readonly adminPort: number;
  /** --timeout, for the admin server behind the port-forward. */
  readonly timeoutMs: number;
}

/** The Ready pods of the target (`opts.gateway` must exist first), with the kubeconfig and namespace. */
async function readyPods(opts: PodTargetOptions): Promise<{ kc: KubeConfig; namespace: string; pods: V1Pod[] }> {
  const kc = loadKubeConfig(opts);
  const namespace = opts.namespace ?? contextNamespace(kc);
  let none: string | undefined;
  if (opts.gateway !== undefined) {
    await requireGateway(kc, namespace, opts.gateway);
    none = `the Gateway exists; its Programmed condition says why it has no proxy: kubectl get gateway ${opts.gateway} -n ${namespace}`;
  }
  return { kc, namespace, pods: await findReadyPods(kc, namespace, opts.selector, opts.what, none) };
}

export async function clusterTarget(opts: PodTargetOptions): Promise<Target> {
  const { kc, namespace, pods } = await readyPods(opts);
  return podTarget(kc, namespace, pods[0]!, opts);
}

/** Most proxies of one Gateway a command asks at once (gwctl budgets): one port-forward each. */
export const MAX_PROXIES = 64;

/**
 * Every Running and Ready pod of the target, each reached through its own port-forward (at most
 * MAX_PROXIES, the first by name; `skipped` counts the others).
 */
export async function clusterTargets(opts: PodTargetOptions): Promise<{ targets: Target[]; skipped: number }> {
  const { kc, namespace, pods } = await readyPods(opts);
  const targets: Target[] = [];
  try {
    for (const pod of pods.slice(0, MAX_PROXIES)) targets.push(await podTarget(kc, namespace, pod, opts));
  } catch (err) {
    await Promise.all(targets.map((t) => t.close()));
    throw err;
  }
  return { targets, skipped: Math.max(0, pods.length - MAX_PROXIES) };
}

async function podTarget(kc: KubeConfig, namespace: string, pod: V1Pod, opts: PodTargetOptions): Promise<Target> {
  const name = pod.metadata!.name!;
  const forwards: PortForwarder[] = [];
  const forward = async (port: number) => {
    const f = await PortForwarder.open(kc, namespace, name, port);
    forwards.push(f);
    return f;
  };
  const admin = await forward(opts.adminPort);
  const listeners = new Map<number, PortForwarder>();
  const description = `pod ${namespace}/${name}`;
  const pfFailure = (f: PortForwarder, port: number, err: unknown) =>
    new GwctlError('TG_GWCTL_PORT_FORWARD', `port-forward to ${description} port ${port} failed: ${f.lastError}`, { cause: err });
  return {
    description,
    adminUrl: `http://127.0.0.1:${admin.localPort}`,
    timeoutMs: opts.timeoutMs,
    streamIdleMs: streamIdleMs(opts.timeoutMs),
    listener: async (port) => {
      let f = listeners.get(port);
      if (!f) listeners.set(port, (f = await forward(port)));
      return `127.0.0.1:${f.localPort}`;
    },
    unreachable: (err, w) => {
      if (w.kind === 'admin') {
        if (admin.lastError) return pfFailure(admin, opts.adminPort, err);
        return new GwctlError('TG_GWCTL_ADMIN_UNREACHABLE', `cannot reach the admin server of ${description} on port ${opts.adminPort}: ${describe(err)}`, { cause: err });
      }
      const f = listeners.get(w.port);
      if (f?.lastError) return pfFailure(f, w.port, err);
      return new GwctlError('TG_GWCTL_REQUEST_FAILED', `request to ${description} port ${w.port} failed: ${describe(err)}`, { cause: err });
    },
    close: async () => {
      await Promise.all(forwards.map((f) => f.close()));
    },
  };
}
