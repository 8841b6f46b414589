// Credentials: --kubeconfig / KUBECONFIG when given, otherwise the pod's ServiceAccount
// (in-cluster). Nothing else is guessed: outside a pod and without a kubeconfig the controller
// refuses to start and says how to give it one.
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { UsageError } from '../options.js';

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function loadKubeConfig(kubeconfig: string | undefined, env: NodeJS.ProcessEnv): { kc: KubeConfig; source: string } {
  const kc = new KubeConfig();
  if (kubeconfig !== undefined) {
    // KUBECONFIG may list several files; the controller takes one.
    if (kubeconfig.includes(':') && !existsSync(kubeconfig)) throw new UsageError(`kubeconfig "${kubeconfig}" lists several files; give one file with --kubeconfig`);
    if (!existsSync(kubeconfig)) throw new UsageError(`kubeconfig ${kubeconfig} does not exist; give a readable file with --kubeconfig or KUBECONFIG`);
    try {
      kc.loadFromFile(kubeconfig);
    } catch (err) {
      throw new UsageError(`kubeconfig ${kubeconfig} cannot be read: ${(err as Error).message}`);
    }
    if (!kc.getCurrentCluster()) throw new UsageError(`kubeconfig ${kubeconfig} has no current context with a cluster; set current-context`);
    return { kc, source: kubeconfig };
  }
  if (env.KUBERNETES_SERVICE_HOST && existsSync(SA_TOKEN)) {
    kc.loadFromCluster();
    return { kc, source: 'in-cluster ServiceAccount' };
  }
  throw new UsageError('no Kubernetes credentials: run in a pod (in-cluster ServiceAccount) or give --kubeconfig <file> (or KUBECONFIG)');
}
