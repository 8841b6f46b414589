// The e2e node's names and addresses: all in 198.18.0.0/15 (the benchmarking range), nothing
// in a private range, nothing routed off the machine.
export const NODE = {
  name: 'tollgate-node',
  /** The node's address, on a port-less bridge; the API server and the kubelet serve on it. */
  ip: '198.18.255.1',
  /** The bridge holding the node address. */
  hostBridge: 'tg0',
  /** The pods' bridge (bridge CNI plugin). */
  podBridge: 'tg-cni0',
  clusterCidr: '198.18.0.0/17',
  /** The node's pod range: the first /24 of clusterCidr, the one the controller-manager allocates first. */
  podCidr: '198.18.0.0/24',
  podGateway: '198.18.0.1',
  serviceCidr: '198.19.0.0/16',
  kubernetesServiceIp: '198.19.0.1',
  dnsServiceIp: '198.19.0.10',
  /**
   * A Gateway address the cluster can give (GatewayStaticAddresses' usable one): in the Service
   * range's lower band, which the allocator leaves to addresses asked for by value while it can.
   */
  gatewayStaticAddress: '198.19.0.240',
  /** One it cannot (the test's unusable one): outside the Service range, so the API server refuses it. */
  gatewayUnusableAddress: '198.18.240.1',
  /** Routed nowhere, so no address in it can leave through the default route. */
  unreachable: '198.18.0.0/16',
  apiPort: 6443,
  kubeletPort: 10250,
  /** cgroup (every v1 hierarchy) holding the node's processes, its containers' shims and its pods. */
  cgroup: 'tollgate-node',
  clusterDomain: 'cluster.local',
} as const;
