// List and watch of objects' metadata only. For the kinds whose objects can be large and are
// mostly not ours (Secrets, ConfigMaps: a tenant may fill a namespace with 1 MiB Secrets), the
// API server is asked for PartialObjectMetadata (the Accept headers below), and of that the
// cache keeps the name, namespace, uid, resourceVersion and labels (for policies' Secret
// selectors; none when together they exceed 4 KiB, translate/policy-refs.ts): a few hundred
// bytes an object, whatever its data, annotations or managed fields. The whole object is read
// only for the ones a Gateway or policy references (referenced.ts).
import { Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import { getJson } from '../kube/raw-get.js';
import { selectableLabels } from '../translate/policy-refs.js';
import type { WatchedKind } from './kinds.js';

// JSON as the fallback: a server that cannot convert sends whole objects, and they are cut the same way.
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
export const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
/** Objects per list page: a page of metadata is at most this many objects' annotations (256 KiB each). */
const PAGE = 100;
const LIST_LIMITS = { maxBytes: 64 * 1024 * 1024, timeoutMs: 60_000 };

/** What the cache keeps of an object: enough to know it exists and when it changed. */
export function metadataOnly(kind: WatchedKind, o: KubernetesObject): KubernetesObject {
  const m = o.metadata ?? {};
  return {
    apiVersion: kind.group ? `${kind.group}/${kind.version}` : kind.version,
    kind: kind.kind,
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, labels: selectableLabels(m.labels) },
  };
}

/** The list function of a metadata-only ListWatch: every page, each item cut to metadataOnly. */
export function metadataList(kc: KubeConfig, kind: WatchedKind): () => Promise<KubernetesListObject<KubernetesObject>> {
  return async () => {
    const items: KubernetesObject[] = [];
    let resourceVersion: string | undefined;
    let cont: string | undefined;
    do {
      const page = (await getJson(kc, kind.path, { labelSelector: kind.labelSelector, fieldSelector: kind.fieldSelector, limit: String(PAGE), continue: cont }, { accept: METADATA_LIST_ACCEPT, ...LIST_LIMITS })) as KubernetesListObject<KubernetesObject>;
      for (const item of page.items ?? []) items.push(metadataOnly(kind, item));
      resourceVersion ??= page.metadata?.resourceVersion;
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return { apiVersion: 'v1', kind: `${kind.kind}List`, metadata: { resourceVersion }, items };
  };
}

/** A KubeConfig for client-node's Watch whose requests ask for metadata only. */
function askingForMetadata(kc: KubeConfig): KubeConfig {
  return {
    getCurrentCluster: () => kc.getCurrentCluster(),
    applyToFetchOptions: (opts: { headers?: Record<string, string> }) => kc.applyToFetchOptions({ ...opts, headers: { ...opts.headers, Accept: METADATA_WATCH_ACCEPT } }),
  } as unknown as KubeConfig;
}

/** client-node's Watch, asking for metadata and handing on each object cut to metadataOnly. */
export class MetadataWatch extends Watch {
  constructor(
    kc: KubeConfig,
    private readonly watchedKind: WatchedKind,
  ) {
    super(askingForMetadata(kc));
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    // ERROR carries a Status (410 Gone among them), which the ListWatch reads as it is.
    return super.watch(path, queryParams, (phase, obj: KubernetesObject) => callback(phase, phase === 'ERROR' ? obj : metadataOnly(this.watchedKind, obj)), done);
  }
}
