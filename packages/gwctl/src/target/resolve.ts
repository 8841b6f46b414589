// From command-line flags to a Target: `gateway/<name>` in a cluster, or --local.
import { usage } from '../errors.js';
import type { Io } from '../io.js';
import type { PodTargetOptions } from './cluster.js';
import { CONTROLLER_SELECTOR, GATEWAY_LABEL } from './labels.js';
import { localTarget } from './local.js';
import { DEFAULT_TIMEOUT_MS, type Target } from './target.js';

/** The Kubernetes client is loaded only for cluster targets: --local and --file stay fast. */
async function clusterTarget(opts: PodTargetOptions): Promise<Target> {
  const { clusterTarget: open } = await import('./cluster.js');
  return open(opts);
}

async function clusterTargets(opts: PodTargetOptions): Promise<{ targets: Target[]; skipped: number }> {
  const { clusterTargets: open } = await import('./cluster.js');
  return open(opts);
}

export interface TargetFlags {
  namespace?: string;
  context?: string;
  kubeconfig?: string;
  local?: boolean;
  adminAddr?: string;
  /** --timeout in milliseconds. */
  timeout?: number;
}

export const PROXY_ADMIN_PORT = 15000;
export const CONTROLLER_ADMIN_PORT = 9095;
export const CONTROLLER_NAMESPACE = 'tollgate-system';

/** The longest name the API server accepts for an object such as a Gateway. */
const MAX_NAME = 253;

/** `gateway/<name>` (also `gateways/<name>`, `gtw/<name>`) to the Gateway's name. */
export function parseGatewayRef(ref: string): string {
  const m = /^(?:gateway|gateways|gtw)(?:\.gateway\.networking\.k8s\.io)?\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(ref);
  if (!m) throw usage(`expected the target gateway/<name>, got '${ref}'`);
  if (m[1]!.length > MAX_NAME) throw usage(`the Gateway name in ${m[0].slice(0, 40)}… is ${m[1]!.length} characters long; a Kubernetes name has at most ${MAX_NAME}`);
  return m[1]!;
}

function checkLocalFlags(flags: TargetFlags): void {
  for (const [flag, value] of [['--namespace', flags.namespace], ['--context', flags.context], ['--kubeconfig', flags.kubeconfig]] as const) {
    if (value !== undefined) throw usage(`${flag} applies to cluster targets, not --local`);
  }
}

export async function gatewayTarget(ref: string | undefined, flags: TargetFlags, io: Io): Promise<Target> {
  const local = localGateway(ref, flags);
  return local ?? clusterTarget(gatewayPods(ref!, flags, io));
}

/** Every proxy of the Gateway (in a cluster), or the one --local names; `skipped`: Ready pods beyond the bound. */
export async function gatewayTargets(ref: string | undefined, flags: TargetFlags, io: Io): Promise<{ targets: Target[]; skipped: number }> {
  const local = localGateway(ref, flags);
  return local ? { targets: [local], skipped: 0 } : clusterTargets(gatewayPods(ref!, flags, io));
}

/** The --local target, or null for a cluster one (whose ref is then checked to be there). */
function localGateway(ref: string | undefined, flags: TargetFlags): Target | null {
  if (flags.local) {
    if (ref !== undefined) throw usage(`give either ${ref} or --local, not both`);
    checkLocalFlags(flags);
    return localTarget(flags.adminAddr ?? `127.0.0.1:${PROXY_ADMIN_PORT}`, '--admin-addr', flags.timeout ?? DEFAULT_TIMEOUT_MS);
  }
  if (flags.adminAddr !== undefined) throw usage('--admin-addr needs --local');
  if (ref === undefined) throw usage('missing target: gateway/<name> (in a cluster) or --local (a standalone proxy)');
  return null;
}

function gatewayPods(ref: string, flags: TargetFlags, io: Io): PodTargetOptions {
  const name = parseGatewayRef(ref);
  return {
    kubeconfig: flags.kubeconfig,
    context: flags.context,
    env: io.env,
    namespace: flags.namespace,
    gateway: name,
    selector: `${GATEWAY_LABEL}=${name}`,
    what: `gateway/${name}`,
    adminPort: PROXY_ADMIN_PORT,
    timeoutMs: flags.timeout ?? DEFAULT_TIMEOUT_MS,
  };
}

export async function controllerTarget(flags: TargetFlags, io: Io): Promise<Target> {
  if (flags.local) {
    checkLocalFlags(flags);
    return localTarget(flags.adminAddr ?? `127.0.0.1:${CONTROLLER_ADMIN_PORT}`, '--admin-addr', flags.timeout ?? DEFAULT_TIMEOUT_MS);
  }
  if (flags.adminAddr !== undefined) throw usage('--admin-addr needs --local');
  return clusterTarget({
    kubeconfig: flags.kubeconfig,
    context: flags.context,
    env: io.env,
    namespace: flags.namespace ?? CONTROLLER_NAMESPACE,
    selector: CONTROLLER_SELECTOR,
    what: 'controller',
    adminPort: CONTROLLER_ADMIN_PORT,
    timeoutMs: flags.timeout ?? DEFAULT_TIMEOUT_MS,
  });
}

/** Runs `fn` with the target and always closes it (port-forwards included). */
export async function withTarget<T>(open: Promise<Target>, fn: (t: Target) => Promise<T>): Promise<T> {
  const target = await open;
  try {
    return await fn(target);
  } finally {
    await target.close();
  }
}
