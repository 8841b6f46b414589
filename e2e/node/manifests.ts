// Workloads the node suites deploy: mock-llm and the proxy, from the images `pnpm images` builds,
// and OPA with its Envoy plugin (the opa test-tool image), with the restrictions a production pod
// has (non-root, read-only root filesystem, no privilege escalation, no capabilities).
import { ECHO_BASIC_IMAGE, extProcImage, opaImage, projectImage } from '../lib/node/images.js';

const restricted = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/** A Deployment of `labels` running `podSpec`. */
function deployment(namespace: string, name: string, labels: Record<string, string>, replicas: number, podSpec: Record<string, unknown>): unknown {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec } },
  };
}

/** A Deployment of one container and its Service, as a List (the shape every workload here has). */
function workload(w: {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  replicas: number;
  container: Record<string, unknown>;
  volumes?: unknown[];
  servicePorts: unknown[];
}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      deployment(w.namespace, w.name, w.labels, w.replicas, { ...(w.volumes ? { volumes: w.volumes } : {}), containers: [{ imagePullPolicy: 'IfNotPresent', securityContext: restricted, ...w.container }] }),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: w.name, namespace: w.namespace, labels: w.labels }, spec: { selector: w.labels, ports: w.servicePorts } },
    ],
  });
}

/**
 * echo-basic, the Gateway API conformance echo server (imported into the node), as Deployment
 * `echo` (label app: echo) in `namespace`: its pod name and namespace in its env, then `env`;
 * ready once `readyPort` takes connections.
 */
export function echoBasicDeployment(namespace: string, o: { ports: number[]; readyPort: number; env?: unknown[]; volumeMounts?: unknown[]; volumes?: unknown[] }): unknown {
  return deployment(namespace, 'echo', { app: 'echo' }, 1, {
    containers: [
      {
        name: 'echo',
        image: ECHO_BASIC_IMAGE,
        imagePullPolicy: 'Never',
        env: [
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
          ...(o.env ?? []),
        ],
        ports: o.ports.map((containerPort) => ({ containerPort })),
        readinessProbe: { tcpSocket: { port: o.readyPort }, periodSeconds: 1 },
        ...(o.volumeMounts ? { volumeMounts: o.volumeMounts } : {}),
      },
    ],
    ...(o.volumes ? { volumes: o.volumes } : {}),
  });
}

/** mock-llm (Deployment and Service `mock-llm`, port 8080) in `namespace`. */
export function mockLlm(namespace: string, replicas = 2, o: { preStopSeconds?: number } = {}): string {
  return workload({
    namespace,
    name: 'mock-llm',
    labels: { app: 'mock-llm' },
    replicas,
    container: {
      name: 'mock-llm',
      image: projectImage('mock-llm'),
      ports: [{ name: 'http', containerPort: 8080 }],
      readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
      // kubelet's own sleep before SIGTERM (the image has no shell), as a backend rolled without
      // errors is run: its pod leaves the EndpointSlice, and the proxies' endpoints, while it
      // still serves.
      ...(o.preStopSeconds ? { lifecycle: { preStop: { sleep: { seconds: o.preStopSeconds } } } } : {}),
    },
    servicePorts: [{ name: 'http', port: 8080, targetPort: 'http' }],
  });
}

/**
 * mock-llm as an HTTPS provider that requires a key: Deployment `llm` and Service `llm` (port 443)
 * in `namespace`, serving with the certificate, key and provider key of Secret `secret` (data
 * keys tls.crt, tls.key and api-key), mounted read-only.
 */
export function httpsMockLlm(namespace: string, secret: string): string {
  return workload({
    namespace,
    name: 'llm',
    labels: { app: 'llm' },
    replicas: 1,
    volumes: [{ name: 'serving', secret: { secretName: secret, defaultMode: 0o444 } }],
    container: {
      name: 'mock-llm',
      image: projectImage('mock-llm'),
      command: ['node', '/app/bin/mock-llm.js', '--host', '0.0.0.0', '--port', '8443', '--tls-cert-file', '/serving/tls.crt', '--tls-key-file', '/serving/tls.key', '--api-key-file', '/serving/api-key'],
      ports: [{ name: 'https', containerPort: 8443 }],
      volumeMounts: [{ name: 'serving', mountPath: '/serving', readOnly: true }],
      readinessProbe: { httpGet: { path: '/healthz', port: 8443, scheme: 'HTTPS' }, periodSeconds: 1 },
    },
    servicePorts: [{ name: 'https', port: 443, targetPort: 'https' }],
  });
}

/**
 * The standalone proxy with its configuration from a ConfigMap, routing /v1 to mock-llm by DNS
 * name; labelled as the pods of Gateway `gateway` are, so gwctl finds it.
 */
export function proxy(namespace: string, gateway = 'node-e2e'): string {
  const labels = { app: 'tollgate', 'gateway.networking.k8s.io/gateway-name': gateway };
  const config = `config:
  adminAddr: 127.0.0.1:15000
binds:
- port: 8080
  listeners:
  - name: main
    protocol: HTTP
    routes:
    - name: llm
      matches:
      - path: { type: PathPrefix, value: /v1 }
      backends:
      - host: mock-llm.${namespace}.svc.cluster.local:8080
`;
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tollgate', namespace }, data: { 'tollgate.yaml': config } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'tollgate', namespace, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [{
                name: 'tollgate',
                image: projectImage('tollgate'),
                imagePullPolicy: 'IfNotPresent',
                args: ['--file', '/etc/tollgate/tollgate.yaml'],
                ports: [{ name: 'http', containerPort: 8080 }, { name: 'ready', containerPort: 15021 }],
                readinessProbe: { httpGet: { path: '/healthz/ready', port: 15021 }, periodSeconds: 1 },
                securityContext: restricted,
                volumeMounts: [{ name: 'config', mountPath: '/etc/tollgate', readOnly: true }],
              }],
              volumes: [{ name: 'config', configMap: { name: 'tollgate' } }],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'tollgate', namespace, labels },
        spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
    ],
  });
}

/**
 * OPA with its Envoy external authorization plugin: `rego` (package envoy.authz, rule allow)
 * from a ConfigMap, the gRPC server on 9191 behind Service `opa` (port grpc).
 */
export function opa(namespace: string, rego: string): string {
  const labels = { app: 'opa' };
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'opa-policy', namespace }, data: { 'policy.rego': rego } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'opa', namespace, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [{
                name: 'opa',
                image: opaImage(),
                imagePullPolicy: 'IfNotPresent',
                args: ['run', '--server', '--addr=0.0.0.0:8181', '--set=plugins.envoy_ext_authz_grpc.addr=0.0.0.0:9191', '--set=plugins.envoy_ext_authz_grpc.path=envoy/authz/allow', '/policy/policy.rego'],
                ports: [{ name: 'grpc', containerPort: 9191 }],
                // Ready once the plugin's gRPC server listens.
                readinessProbe: { tcpSocket: { port: 9191 }, periodSeconds: 1 },
                securityContext: restricted,
                volumeMounts: [{ name: 'policy', mountPath: '/policy', readOnly: true }],
              }],
              volumes: [{ name: 'policy', configMap: { name: 'opa-policy' } }],
            },
          },
        },
      },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'opa', namespace, labels }, spec: { selector: labels, ports: [{ name: 'grpc', port: 9191, targetPort: 'grpc', appProtocol: 'grpc' }] } },
    ],
  });
}

/** The extProc test processor (e2e/tools/ext-proc) on 9002 behind Service `ext-proc` (port grpc). */
export function extProcessor(namespace: string): string {
  const labels = { app: 'ext-proc' };
  const container = { name: 'ext-proc', image: extProcImage(), imagePullPolicy: 'IfNotPresent', args: ['-addr', '0.0.0.0:9002'], ports: [{ name: 'grpc', containerPort: 9002 }], readinessProbe: { tcpSocket: { port: 9002 }, periodSeconds: 1 }, securityContext: restricted };
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ext-proc', namespace, labels }, spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [container] } } } };
  const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext-proc', namespace, labels }, spec: { selector: labels, ports: [{ name: 'grpc', port: 9002, targetPort: 'grpc', appProtocol: 'grpc' }] } };
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [deployment, service] });
}

/** Gateway `gateway` of class tollgate (one HTTP listener on port 80) and HTTPRoute `chat` sending everything to `backendRef`. */
export function gatewayWithRoute(namespace: string, gateway: string, backendRef: Record<string, unknown>): unknown[] {
  return [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: gateway, namespace },
      spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'chat', namespace },
      spec: { parentRefs: [{ name: gateway }], rules: [{ backendRefs: [backendRef] }] },
    },
  ];
}
