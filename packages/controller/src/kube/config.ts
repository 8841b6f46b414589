// Credentials: --kubeconfig / KUBECONFIG when given, otherwise the pod's ServiceAccount
// (in-cluster). Nothing else is guessed: outside a pod and without a kubeconfig the controller
// refuses to start and says how to give it one.
import { existsSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { KeepAliveKubeConfig } from './keep-alive.js';
import { CONTROLLER_ERRORS } from '../errors.js';

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function loadKubeConfig(kubeconfig: string | undefined, env: NodeJS.ProcessEnv): { kc: KubeConfig; source: string } {
  const kc: KubeConfig = new KeepAliveKubeConfig();
  if (kubeconfig !== undefined) {
    // KUBECONFIG may list several files; the controller takes one.
    if (kubeconfig.includes(':') && !existsSync(kubeconfig)) throw CONTROLLER_ERRORS.kubeconfig.create({ path: kubeconfig, problem: 'lists several files; give one file with --kubeconfig' });
    if (!existsSync(kubeconfig)) throw CONTROLLER_ERRORS.kubeconfig.create({ path: kubeconfig, problem: 'does not exist' });
    try {
      kc.loadFromFile(kubeconfig);
    } catch (err) {
      throw CONTROLLER_ERRORS.kubeconfig.create({ path: kubeconfig, problem: `cannot be read: ${(err as Error).message}` });
    }
    if (!kc.getCurrentCluster()) throw CONTROLLER_ERRORS.kubeconfig.create({ path: kubeconfig, problem: 'has no current context with a cluster; set current-context' });
    return { kc, source: kubeconfig };
  }
  if (env.KUBERNETES_SERVICE_HOST && existsSync(SA_TOKEN)) {
    kc.loadFromCluster();
    return { kc, source: 'in-cluster ServiceAccount' };
  }
  throw CONTROLLER_ERRORS.noCredentials.create();
}
