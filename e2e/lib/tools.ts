// Where the e2e tests find kube-apiserver, etcd, kubectl and helm: the cache that
// scripts/install-test-tools.sh fills, keyed by the versions in e2e/tools.json.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const INSTALL_COMMAND = 'bash scripts/install-test-tools.sh';

export interface ToolVersions {
  kubernetes: string;
  kubernetesStaging: string;
  etcd: string;
  helm: string;
  gatewayApi: string;
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
    // The repository is cloned with ../shared beside it (CI and development alike).
    gatewayApiCrds: process.env.TOLLGATE_GATEWAY_API_CRDS ?? resolve(REPO_ROOT, '..', 'shared', `gateway-api-${VERSIONS.gatewayApi}`),
  };
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
