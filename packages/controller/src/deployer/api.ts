// The API calls the deployer makes, and nothing else (the chart's RBAC grants exactly these):
// server-side apply of its objects (patch, and create for a new one), a list of what it owns
// in every namespace (by label), a list by name of an object it is about to create (is the
// name taken by someone else's?) and delete of what is no longer needed.
import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesListObject, type KubernetesObject, type V1Service } from '@kubernetes/client-node';
import { statusCode } from '../kube/errors.js';
import { GATEWAY_NAME_LABEL, OWNED_SELECTOR } from './names.js';

/** The field manager of every apply: `kubectl get -o yaml --show-managed-fields` shows it. */
export const FIELD_MANAGER = 'tollgate';

/** The kinds the deployer writes, as apiVersion and kind. */
export const DEPLOYED_KINDS = [
  { apiVersion: 'v1', kind: 'ServiceAccount' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'Service' },
] as const;

export type DeployedKind = (typeof DEPLOYED_KINDS)[number]['kind'];

export interface OwnedObject {
  readonly kind: DeployedKind;
  readonly namespace: string;
  readonly name: string;
  /** Its gateway-name label: the Gateway whose proxies it runs. */
  readonly gateway: string;
  /** A Service's ClusterIPs as allocated (an address cannot change in place: a new one means a new Service). */
  readonly clusterIPs?: readonly string[];
}

export interface DeployerApi {
  /** Server-side apply, forced (the deployer owns these objects); resolves to the stored object. */
  apply(obj: KubernetesObject): Promise<KubernetesObject>;
  /** Every object of `kind` carrying the deployer's labels, in every namespace. */
  listOwned(kind: DeployedKind): Promise<OwnedObject[]>;
  /** Whether an object of that name exists, whoever made it (a list by name: no get is granted). */
  exists(kind: DeployedKind, namespace: string, name: string): Promise<boolean>;
  /** Resolves also when the object is already gone. */
  delete(obj: OwnedObject): Promise<void>;
}

export class KubeDeployerApi implements DeployerApi {
  readonly #api: KubernetesObjectApi;
  constructor(kc: KubeConfig) {
    this.#api = KubernetesObjectApi.makeApiClient(kc);
  }

  apply(obj: KubernetesObject): Promise<KubernetesObject> {
    return this.#api.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  async listOwned(kind: DeployedKind): Promise<OwnedObject[]> {
    return (await this.listOwnedObjects(kind)).items.map((item) => {
      const clusterIPs = (item as V1Service).spec?.clusterIPs;
      return { kind, namespace: item.metadata?.namespace ?? '', name: item.metadata?.name ?? '', gateway: item.metadata?.labels?.[GATEWAY_NAME_LABEL] ?? '', ...(clusterIPs ? { clusterIPs } : {}) };
    });
  }

  async exists(kind: DeployedKind, namespace: string, name: string): Promise<boolean> {
    const k = DEPLOYED_KINDS.find((x) => x.kind === kind)!;
    const page = await this.#api.list(k.apiVersion, k.kind, namespace, undefined, undefined, undefined, `metadata.name=${name}`, undefined, 1);
    return page.items.length > 0;
  }

  /** The whole objects, in pages of 500 (consistent: the pages of one list share its resourceVersion). */
  async listOwnedObjects(kind: DeployedKind): Promise<KubernetesListObject<KubernetesObject>> {
    const k = DEPLOYED_KINDS.find((x) => x.kind === kind)!;
    const items: KubernetesObject[] = [];
    let cont: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await this.#api.list(k.apiVersion, k.kind, undefined, undefined, undefined, undefined, undefined, OWNED_SELECTOR, 500, cont);
      // Items of a list carry no apiVersion and kind; the watch's objects do.
      for (const item of page.items) items.push({ ...item, apiVersion: k.apiVersion, kind: k.kind });
      resourceVersion ??= page.metadata?.resourceVersion;
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return { apiVersion: k.apiVersion, kind: `${k.kind}List`, metadata: { resourceVersion }, items };
  }

  async delete(obj: OwnedObject): Promise<void> {
    const k = DEPLOYED_KINDS.find((x) => x.kind === obj.kind)!;
    try {
      // Background: the garbage collector removes a Deployment's ReplicaSets and pods after it.
      await this.#api.delete({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name: obj.name, namespace: obj.namespace } }, undefined, undefined, undefined, undefined, 'Background');
    } catch (err) {
      if (statusCode(err) === 404) return;
      throw err;
    }
  }
}
