// Where the e2e tests find kube-apiserver, etcd, kubectl and helm: the cache that
// scripts/install-test-tools.sh fills, keyed by the versions in e2e/tools.json.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const INSTALL_COMMAND = 'bash scripts/install-test-tools.sh';

export interface ToolVersions {
  kubernetes: string;
  kubernetesStaging: string;
  etcd: string;
  helm: string;
  gatewayApi: string;
  coredns: string;
  pause: string;
  /** OPA with an Envoy external authorization plugin (e2e/tools/opa-envoy); absent in a checkout without it. */
  opaEnvoy?: string;
  /** go-control-plane, the version e2e/tools/envoy-proto and e2e/tools/ext-proc build on. */
  goControlPlane: string;
}

export const VERSIONS = JSON.parse(readFileSync(join(REPO_ROOT, 'e2e/tools.json'), 'utf8')) as ToolVersions;

export function cacheDir(): string {
  return process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate');
}

export interface Tools {
  kubeApiserver: string;
  kubectl: string;
  etcd: string;
  helm: string;
  gatewayApiCrds: string;
}

export function toolPaths(): Tools {
  const cache = cacheDir();
  return {
    kubeApiserver: join(cache, `kubernetes-${VERSIONS.kubernetes}`, 'kube-apiserver'),
    kubectl: join(cache, `kubernetes-${VERSIONS.kubernetes}`, 'kubectl'),
    etcd: join(cache, `etcd-${VERSIONS.etcd}`, 'etcd'),
    helm: join(cache, `helm-${VERSIONS.helm}`, 'helm'),
    // The standard channel's CRDs, copied by the installer from the Go module sigs.k8s.io/gateway-api.
    gatewayApiCrds: process.env.TOLLGATE_GATEWAY_API_CRDS ?? gatewayApiCrdDir('standard'),
  };
}

/** A channel's Gateway API CRDs in the cache (scripts/install-test-tools.sh: install_gateway_api_crds). */
export function gatewayApiCrdDir(channel: 'standard' | 'experimental'): string {
  return join(cacheDir(), `gateway-api-crds-${VERSIONS.gatewayApi}`, channel);
}

/** The tools that are missing, as readable lines; empty when everything is installed. */
export function missingTools(tools: Tools = toolPaths()): string[] {
  const missing: string[] = [];
  for (const [name, path] of Object.entries(tools) as [string, string][]) {
    if (!existsSync(path)) missing.push(`${name}: ${path}`);
  }
  return missing;
}

/**
 * Decides whether a suite on the real API server can run. In CI (CI=true) a missing tool is
 * an error, so the suite fails rather than passing by skipping; elsewhere the suite is
 * skipped with a message that says how to install the tools.
 */
export function e2eAvailability(): { run: boolean; reason?: string } {
  const missing = missingTools();
  if (!missing.length) return { run: true };
  const message = `e2e tools missing (run \`${INSTALL_COMMAND}\` from the repository root):\n  ${missing.join('\n  ')}`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping e2e suite: ${message}`);
  return { run: false, reason: message };
}

/** What the e2e node runs besides the control plane's tools (see e2e/lib/node/). */
export interface NodeTools {
  kubelet: string;
  kubeProxy: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  containerd: string;
  ctr: string;
  runc: string;
  cniBridge: string;
  iptables: string;
  nft: string;
  podman: string;
  /** Directory of the OCI archives of the pause, CoreDNS and echo-basic images. */
  nodeImages: string;
}

/** Directory name of the node images in the cache; scripts/install-test-tools.sh uses the same key. */
function nodeImagesDir(cache: string): string {
  const hash = createHash('sha256');
  for (const source of ['e2e/tools/pause/pause.c', 'e2e/tools/coredns/main.go', 'e2e/tools/coredns/go.mod']) hash.update(readFileSync(join(REPO_ROOT, source)));
  const key = hash.digest('hex').slice(0, 12);
  return join(cache, `node-images-pause${VERSIONS.pause}-${key}-coredns${VERSIONS.coredns}-echo${VERSIONS.gatewayApi}`);
}

export function nodeToolPaths(): NodeTools {
  const cache = cacheDir();
  const node = join(cache, `kubernetes-node-${VERSIONS.kubernetes}`);
  return {
    kubelet: join(node, 'kubelet'),
    kubeProxy: join(node, 'kube-proxy'),
    kubeControllerManager: join(node, 'kube-controller-manager'),
    kubeScheduler: join(node, 'kube-scheduler'),
    containerd: '/usr/bin/containerd',
    ctr: '/usr/bin/ctr',
    runc: '/usr/sbin/runc',
    cniBridge: '/usr/lib/cni/bridge',
    iptables: '/usr/sbin/iptables',
    nft: '/usr/sbin/nft',
    podman: '/usr/bin/podman',
    nodeImages: nodeImagesDir(cache),
  };
}

/**
 * Whether a suite on the e2e node can run: the control plane's tools, the node's, and root.
 * As e2eAvailability: a missing piece fails the run in CI and skips the suite elsewhere.
 */
export function nodeAvailability(): { run: boolean; reason?: string } {
  const missing = [...missingTools()];
  for (const [name, path] of Object.entries(nodeToolPaths()) as [string, string][]) {
    if (!existsSync(path)) missing.push(`${name}: ${path}`);
  }
  if (process.getuid?.() !== 0) missing.push('root: the node needs root (network interfaces, iptables, mounts, cgroups)');
  if (!missing.length) return { run: true };
  const message = `e2e node unavailable (run \`${INSTALL_COMMAND}\` as root from the repository root, then \`pnpm images\`):\n  ${missing.join('\n  ')}`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping e2e node suite: ${message}`);
  return { run: false, reason: message };
}
