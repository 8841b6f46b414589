// The two API calls the status writer makes: read one object, replace its status subresource
// (never the object itself). The replace carries metadata.resourceVersion, so a write based on
// a stale object fails with 409 Conflict instead of overwriting someone else's change.
import { CustomObjectsApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { statusCode } from '../kube/errors.js';
import { kindOf } from '../watch/kinds.js';

export type StatusKind = 'GatewayClass' | 'Gateway' | 'ListenerSet' | 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute' | 'GatewayPolicy' | 'BackendTLSPolicy' | 'Backend';

export interface StatusApi {
  /** The object, or undefined when it does not exist. */
  get(kind: StatusKind, name: string, namespace?: string): Promise<KubernetesObject | undefined>;
  /** PUT .../status; resolves to the stored object. Throws ApiException (409 on conflict). */
  replaceStatus(kind: StatusKind, obj: KubernetesObject): Promise<KubernetesObject>;
}

export class KubeStatusApi implements StatusApi {
  readonly #api: CustomObjectsApi;
  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(CustomObjectsApi);
  }

  async get(kind: StatusKind, name: string, namespace?: string): Promise<KubernetesObject | undefined> {
    const k = kindOf(kind);
    try {
      return (await (namespace
        ? this.#api.getNamespacedCustomObject({ group: k.group, version: k.version, plural: k.plural, namespace, name })
        : this.#api.getClusterCustomObject({ group: k.group, version: k.version, plural: k.plural, name }))) as KubernetesObject;
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }

  async replaceStatus(kind: StatusKind, obj: KubernetesObject): Promise<KubernetesObject> {
    const k = kindOf(kind);
    const name = obj.metadata!.name!;
    const namespace = obj.metadata!.namespace;
    const common = { group: k.group, version: k.version, plural: k.plural, name, body: obj, fieldManager: 'tollgate' };
    return (await (namespace
      ? this.#api.replaceNamespacedCustomObjectStatus({ ...common, namespace })
      : this.#api.replaceClusterCustomObjectStatus(common))) as KubernetesObject;
  }
}
