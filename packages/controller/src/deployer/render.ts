// render(): the objects that run the proxies of one Gateway, in the Gateway's own namespace:
// a ServiceAccount (the identity the snapshot stream authorizes), a Deployment of the proxy
// in cluster mode and a Service with one port per listener port (and, when spec.addresses asks
// for them, its ClusterIPs: proxy-settings/requested-addresses.ts). Pure: the same Gateway and
// parameters give the same objects, byte for byte; nothing is read from the cluster.
//
// The settings arrive resolved in `params.defaults` (proxy-settings/parameters.ts: the class's and the
// Gateway's ConfigMaps, and the image, which only the cluster admin chooses). Replicas and
// resources may also come from `spec.infrastructure.annotations` (tollgate.dev/* keys, see
// proxy-settings/overrides.ts); a bad one is reported in `problems` and its default used, so one typo never
// takes a Gateway's proxies away. Everything else that decides what runs (command, arguments,
// security context, host namespaces, volumes, ServiceAccount, an environment of nothing but
// the checked process settings) is fixed here and is nobody's setting. `spec.infrastructure.labels` and `.annotations` are also put
// on every object and on the pods, as the Gateway API asks (the tollgate.dev/ settings on the
// objects only).
import type { V1Deployment, V1OwnerReference, V1Service, V1ServiceAccount, V1ServiceSpec } from '@kubernetes/client-node';
import type { Gateway } from '../types/gateway-api.js';
import { COMPONENT, COMPONENT_LABEL, GATEWAY_NAME_LABEL, MANAGED_BY, MANAGED_BY_LABEL, proxyName } from './names.js';
import { ANNOTATION_PREFIX, readOverrides, type ProxySettings } from '../proxy-settings/overrides.js';
import { CA_CONFIGMAP, CA_CONFIGMAP_KEY } from '../pki/ca-configmap.js';
import { PROXY_RESERVED_PORTS as RESERVED_PORTS, READINESS_PORT } from '../proxy-settings/ports.js';
import { requestedAddresses } from '../proxy-settings/requested-addresses.js';

/** Audience of the projected token the proxy presents to the snapshot stream. */
export const TOKEN_AUDIENCE = 'tollgate';
export const TOKEN_DIR = '/var/run/secrets/tollgate';
export const TOKEN_PATH = `${TOKEN_DIR}/token`;
/** The `tollgate-ca` ConfigMap of the Gateway's namespace (the stream's CA certificate) is mounted here. */
export const CA_DIR = '/etc/tollgate/ca';
export const CA_PATH = `${CA_DIR}/${CA_CONFIGMAP_KEY}`;
export { READINESS_PORT };
export const ADMIN_ADDR = '127.0.0.1:15000';
/** The proxy image runs as this user (images/Containerfile). */
const PROXY_UID = 1000;
/**
 * A deleted proxy pod keeps serving this long before it is told to stop: the pod leaves the
 * Service's endpoints at once, but kube-proxy on every node needs a moment to follow, and a
 * connection sent meanwhile to a pod that closed its ports is refused. kubelet's own sleep
 * (lifecycle.preStop.sleep): the image needs no shell.
 */
export const PRESTOP_DELAY_SECONDS = 5;
/** The proxy's own drain deadline after SIGTERM (its default drainTimeout). */
const PROXY_DRAIN_SECONDS = 30;
/** Delay, drain, and a margin before kubelet kills what is left. */
const TERMINATION_GRACE_SECONDS = PRESTOP_DELAY_SECONDS + PROXY_DRAIN_SECONDS + 5;

export interface RenderParams {
  /** --proxy-image of the controller. */
  readonly proxyImage: string;
  /** host:port of the snapshot stream, as proxies reach it (--snapshot-service). */
  readonly snapshotService: string;
  /** The settings from the parameters (the image among them); annotations apply over replicas and resources. */
  readonly defaults: ProxySettings;
  /** The controller serves the stream without TLS (--snapshot-plaintext): proxies connect so. */
  readonly plaintext?: boolean;
}

export type ProxyObject = V1ServiceAccount | V1Deployment | V1Service;

export interface RenderResult {
  /** ServiceAccount, Deployment, Service; empty when the Gateway cannot be deployed at all. */
  readonly objects: readonly ProxyObject[];
  /** Each names the field, what is wrong and the fix. */
  readonly problems: readonly string[];
}

/** A Gateway as the API server returns it: uid set (owner references need it). */
export function render(gateway: Gateway, params: RenderParams): RenderResult {
  const { name: gwName, namespace, uid } = gateway.metadata;
  if (!namespace || !uid) return { objects: [], problems: ['metadata.namespace and metadata.uid are required (a Gateway read from the API server has both)'] };
  // A label value is at most 63 characters; the Gateway API's gateway-name label needs the whole name.
  if (gwName.length > 63) return { objects: [], problems: [`metadata.name is ${gwName.length} characters; the ${GATEWAY_NAME_LABEL} label holds at most 63: give the Gateway a shorter name`] };

  const { settings, problems: overrideProblems } = readOverrides(gateway.spec.infrastructure?.annotations, params.defaults);
  const problems = [...overrideProblems];
  const name = proxyName(gateway);
  // Also the pod selector (immutable once the Deployment exists): another implementation's
  // pods carrying the same gateway-name label are never selected.
  const selector = { [GATEWAY_NAME_LABEL]: gwName, [MANAGED_BY_LABEL]: MANAGED_BY, [COMPONENT_LABEL]: COMPONENT };
  // Ours last: an infrastructure label cannot take the selector or the owner labels away.
  const labels = { ...gateway.spec.infrastructure?.labels, ...selector };
  const infraAnnotations = gateway.spec.infrastructure?.annotations;
  // Not on the pods: a changed setting (say replicas) must not roll every proxy pod.
  const podAnnotations = infraAnnotations && Object.fromEntries(Object.entries(infraAnnotations).filter(([k]) => !k.startsWith(ANNOTATION_PREFIX)));
  const owner: V1OwnerReference = { apiVersion: gateway.apiVersion, kind: 'Gateway', name: gwName, uid, controller: true, blockOwnerDeletion: true };
  const metadata = () => ({ name, namespace, labels: { ...labels }, ...(infraAnnotations ? { annotations: { ...infraAnnotations } } : {}), ownerReferences: [{ ...owner }] });

  const ports = listenerPorts(gateway, problems);

  const serviceAccount: V1ServiceAccount = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(),
    // The proxy never calls the Kubernetes API; its only token is the projected one below.
    automountServiceAccountToken: false,
  };

  const deployment: V1Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(),
    spec: {
      replicas: settings.replicas,
      selector: { matchLabels: { ...selector } },
      template: {
        metadata: { labels: { ...labels }, ...(podAnnotations && Object.keys(podAnnotations).length ? { annotations: podAnnotations } : {}) },
        spec: {
          serviceAccountName: name,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: PROXY_UID,
            runAsGroup: PROXY_UID,
            seccompProfile: { type: 'RuntimeDefault' },
            // Listener ports below 1024 (80, 443) without any capability: a namespaced sysctl
            // in Kubernetes' safe set, allowed under the restricted Pod Security Standard. Always
            // set, like the ports below never listed: the pod template does not depend on the
            // listeners, so a listener added or removed reaches the running proxies through
            // their snapshot instead of rolling them (a new pod takes far longer to serve).
            sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }],
          },
          containers: [
            {
              name: 'proxy',
              image: settings.image ?? params.proxyImage,
              args: [
                '--controller',
                params.snapshotService,
                '--gateway',
                `${namespace}/${gwName}`,
                ...(params.plaintext ? ['--controller-plaintext'] : ['--controller-ca', CA_PATH, '--controller-token', TOKEN_PATH]),
                '--admin-addr',
                ADMIN_ADDR,
                // Every CPU the pod may use serves requests, unless the parameters say how many threads.
                ...(settings.process?.workers === undefined ? ['--workers', 'auto'] : []),
              ],
              // Process settings from the parameters; none by default (no env: the pod template,
              // and so the running pods, stay as they are for a Gateway that sets none).
              ...(settings.process ? { env: [{ name: 'TOLLGATE_SETTINGS', value: settingsJson(settings.process) }] } : {}),
              // Listener ports are not listed (the Service targets them by number), see sysctls.
              ports: [{ name: 'readiness', containerPort: READINESS_PORT, protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/healthz/ready', port: READINESS_PORT }, periodSeconds: 5, failureThreshold: 2 },
              // On deletion: stop being an endpoint first, stop accepting after (SIGTERM, once the
              // sleep ends: readiness false, in-flight requests drain, exit 0).
              lifecycle: { preStop: { sleep: { seconds: PRESTOP_DELAY_SECONDS } } },
              resources: { requests: { ...settings.resources.requests }, limits: { ...settings.resources.limits } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [
                { name: 'tollgate-token', mountPath: TOKEN_DIR, readOnly: true },
                ...(params.plaintext ? [] : [{ name: 'tollgate-ca', mountPath: CA_DIR, readOnly: true }]),
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            // Kubelet renews the token before it expires; the proxy reads it on every connect.
            { name: 'tollgate-token', projected: { sources: [{ serviceAccountToken: { audience: TOKEN_AUDIENCE, path: 'token', expirationSeconds: 3600 } }] } },
            // Not optional: a pod waits for its CA (the controller publishes it) instead of failing.
            ...(params.plaintext ? [] : [{ name: 'tollgate-ca', configMap: { name: CA_CONFIGMAP, items: [{ key: CA_CONFIGMAP_KEY, path: CA_CONFIGMAP_KEY }] } }]),
            { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
          ],
        },
      },
    },
  };

  const service: V1Service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(),
    spec: {
      type: 'ClusterIP',
      ...serviceAddresses(gateway),
      selector: { ...selector },
      ports: ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.port, protocol: 'TCP' })),
    },
  };

  // A Service must have a port: a Gateway without an HTTP listener gets proxies but no Service.
  return { objects: ports.length ? [serviceAccount, deployment, service] : [serviceAccount, deployment], problems };
}

/**
 * The ClusterIPs the Gateway asks for (spec.addresses), or nothing: the cluster chooses, and an
 * address it chose is kept (the API server keeps a ClusterIP an apply leaves out). Two families
 * need RequireDualStack: a cluster that has not both refuses the Service, and the Gateway says so.
 */
function serviceAddresses(gateway: Gateway): Pick<V1ServiceSpec, 'clusterIP' | 'clusterIPs' | 'ipFamilies' | 'ipFamilyPolicy'> {
  const requested = requestedAddresses(gateway);
  if (!requested.ok || !requested.addresses.clusterIPs.length) return {};
  const { clusterIPs, families } = requested.addresses;
  return { clusterIP: clusterIPs[0]!, clusterIPs: [...clusterIPs], ...(clusterIPs.length > 1 ? { ipFamilies: [...families], ipFamilyPolicy: 'RequireDualStack' } : {}) };
}

interface ListenerPort {
  readonly name: string;
  readonly port: number;
}

/**
 * One port per distinct listener port of a protocol the proxy serves (HTTP, HTTPS, TLS); listeners
 * that share a port (different hostnames) share it. Other protocols are refused in the
 * Gateway's listener status, so they get no port. Names fit a container port (at most 15
 * characters).
 */
function listenerPorts(gateway: Gateway, problems: string[]): ListenerPort[] {
  const ports = new Map<number, string>();
  for (const l of gateway.spec.listeners) {
    if (l.protocol !== 'HTTP' && l.protocol !== 'HTTPS' && l.protocol !== 'TLS') continue;
    if (RESERVED_PORTS.has(l.port)) problems.push(`spec.listeners[${l.name}].port ${l.port} is the proxy's own ${RESERVED_PORTS.get(l.port)} port; choose another port`);
    else if (!ports.has(l.port)) ports.set(l.port, l.protocol.toLowerCase());
  }
  return [...ports].sort(([a], [b]) => a - b).map(([port, scheme]) => ({ name: `${scheme}-${port}`, port }));
}

/** The process settings as the proxy reads them (TOLLGATE_SETTINGS), keys sorted: the same settings render the same pod. */
function settingsJson(process: Readonly<Record<string, string | number>>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(process).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}
