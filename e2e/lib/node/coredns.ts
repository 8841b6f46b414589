// Cluster DNS for the e2e node: CoreDNS (built here, imported under its upstream name) serving
// cluster.local from the API, on the Service address the kubelet hands to pods. It forwards
// nothing: a name outside the cluster gets no answer from outside the machine.
import { NODE } from './addresses.js';

export function corednsManifest(image: string): string {
  const labels = { 'k8s-app': 'kube-dns' };
  const corefile = `.:1053 {
    errors
    health :8080
    ready :8181
    kubernetes ${NODE.clusterDomain} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
`;
  const items = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'tollgate-e2e:coredns' },
      rules: [
        { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'tollgate-e2e:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tollgate-e2e:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'coredns', namespace: 'kube-system' }, data: { Corefile: corefile } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            priorityClassName: 'system-cluster-critical',
            dnsPolicy: 'Default',
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
            containers: [
              {
                name: 'coredns',
                image,
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 1053, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' },
                ],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels },
      spec: {
        selector: labels,
        clusterIP: NODE.dnsServiceIp,
        ports: [
          { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
        ],
      },
    },
  ];
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2);
}
