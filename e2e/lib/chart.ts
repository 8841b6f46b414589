// The Tollgate chart installed on the e2e node the way a user installs it: `helm install` of
// charts/tollgate into tollgate-system with the chart's defaults (the controller as a pod with
// in-cluster credentials, the snapshot stream with TLS and TokenReview authentication), the
// images pointed at another repository when `pnpm images` built them under one
// (TOLLGATE_IMAGE_REPOSITORY), so a run does not use the images other checkouts built.
import { join } from 'node:path';
import type { Node } from './node/node.js';
import { REPO_ROOT } from './tools.js';

export const CHART = join(REPO_ROOT, 'charts/tollgate');
export const CHART_RELEASE = 'tollgate';
export const SYSTEM_NAMESPACE = 'tollgate-system';
export const CONTROLLER_DEPLOYMENT = 'tollgate-controller';
/** The repository the chart's (and the examples') image names use. */
export const DEFAULT_IMAGE_REPOSITORY = 'ghcr.io/tollgate-dev';

/** The repository `pnpm images` built the project's images under. */
export function imageRepository(): string {
  return process.env.TOLLGATE_IMAGE_REPOSITORY ?? DEFAULT_IMAGE_REPOSITORY;
}

/** `--set` arguments that point the chart at imageRepository() (none for the default). */
export function chartImageValues(): string[] {
  const repository = imageRepository();
  if (repository === DEFAULT_IMAGE_REPOSITORY) return [];
  return ['--set', `controller.image.repository=${repository}/tollgate-controller`, '--set', `proxy.image.repository=${repository}/tollgate`];
}

/**
 * `helm install` of the chart (plus `extraArgs`, e.g. more `--set`), then waits until the
 * controller's Deployment has rolled out. Returns helm's output.
 */
export async function installChart(node: Node, extraArgs: readonly string[] = [], rolloutTimeoutS = 180): Promise<string> {
  const args = ['install', CHART_RELEASE, CHART, '-n', SYSTEM_NAMESPACE, '--create-namespace', ...chartImageValues(), ...extraArgs];
  const r = await node.helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  const rollout = await node.kubectl(['rollout', 'status', '-n', SYSTEM_NAMESPACE, `deployment/${CONTROLLER_DEPLOYMENT}`, `--timeout=${rolloutTimeoutS}s`]);
  if (rollout.code !== 0) throw new Error(`the controller did not roll out within ${rolloutTimeoutS} s: ${rollout.stderr || rollout.stdout}`);
  return r.stdout;
}

/**
 * `helm uninstall` of the release, without waiting for its objects to go: a suite that shares
 * the node with others leaves the release name and the GatewayClass free for the next.
 */
export async function uninstallChart(node: Node): Promise<void> {
  const r = await node.helm(['uninstall', CHART_RELEASE, '-n', SYSTEM_NAMESPACE]);
  if (r.code !== 0) throw new Error(`helm uninstall ${CHART_RELEASE} exited ${r.code}: ${r.stderr}`);
}
