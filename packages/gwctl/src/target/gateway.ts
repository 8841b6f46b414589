// A `gateway/<name>` target names a Gateway: gwctl reads it before looking for its proxy pods,
// so that a wrong name or namespace is reported as such, not as a Gateway without pods.
import { ApiException, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { GwctlError } from '../errors.js';
import { kubeApiError, kubeStatus } from './kube-api-error.js';

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const GATEWAY_VERSION = 'v1';

/** Resolves when the Gateway exists; exit 12 when it (or the Gateway API) does not, exit 4 when the API server refuses. */
export async function requireGateway(kc: KubeConfig, namespace: string, name: string): Promise<void> {
  const api = kc.makeApiClient(CustomObjectsApi);
  try {
    await api.getNamespacedCustomObject({ group: GATEWAY_GROUP, version: GATEWAY_VERSION, namespace, plural: 'gateways', name });
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) {
      // The Gateway's own 404 names it in details; a 404 without the name is the resource
      // type missing: the cluster serves no Gateway API.
      if (kubeStatus(err).details?.name === name) {
        throw new GwctlError('TG_GWCTL_NO_GATEWAY', `Gateway ${name} not found in namespace "${namespace}" (kubectl get gateways -A lists them; -n sets the namespace)`, { cause: err });
      }
      throw new GwctlError(
        'TG_GWCTL_NO_GATEWAY',
        `Gateway ${name} not found: the cluster does not serve gateways.${GATEWAY_GROUP}/${GATEWAY_VERSION} (are the Gateway API CRDs installed? docs/kubernetes.md, Install)`,
        { cause: err },
      );
    }
    throw kubeApiError(`get Gateway ${name} in namespace "${namespace}" (server ${kc.getCurrentCluster()?.server})`, err);
  }
}
