// Configuration files of the e2e node's components. Every path is inside the node's directory;
// every address is the node's or loopback.
import { NODE } from './addresses.js';

export interface NodePaths {
  dir: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  containerdConfig: string;
  registryHosts: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletRoot: string;
  kubeletConfig: string;
  kubeletKubeconfig: string;
  podLogs: string;
  resolvConf: string;
  kubeProxyConfig: string;
  adminKubeconfig: string;
}

export function nodePaths(dir: string): NodePaths {
  return {
    dir,
    containerdRoot: `${dir}/containerd/root`,
    containerdState: `${dir}/containerd/state`,
    containerdSocket: `${dir}/containerd/containerd.sock`,
    containerdConfig: `${dir}/containerd/config.toml`,
    registryHosts: `${dir}/containerd/certs.d`,
    cniConfDir: `${dir}/cni/net.d`,
    cniIpamDir: `${dir}/cni/ipam`,
    kubeletRoot: `${dir}/kubelet`,
    kubeletConfig: `${dir}/kubelet-config.json`,
    kubeletKubeconfig: `${dir}/kubelet.kubeconfig`,
    podLogs: `${dir}/pod-logs`,
    resolvConf: `${dir}/resolv.conf`,
    kubeProxyConfig: `${dir}/kube-proxy-config.json`,
    adminKubeconfig: `${dir}/kubeconfig`,
  };
}

/** containerd 1.6 (config version 2) with only the CRI, overlayfs and runc. */
export function containerdConfig(p: NodePaths, sandboxImage: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${p.containerdRoot}"
state = "${p.containerdState}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "${p.containerdSocket}"

[ttrpc]
  address = "${p.containerdSocket}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[${cri}]
  sandbox_image = "${sandboxImage}"
  # Raising a process's OOM score adjustment needs a capability the sandbox may lack.
  restrict_oom_score_adj = true
  # exec, attach and port-forward streams, proxied by the kubelet.
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  max_container_log_line_size = 16384

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  BinaryName = "/usr/sbin/runc"
  SystemdCgroup = false

[${cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "${p.cniConfDir}"
  max_conf_num = 1

[${cri}.registry]
  config_path = "${p.registryHosts}"
`;
}

/**
 * Every registry resolves to a closed loopback port: an image that was not imported fails to
 * pull at once, and no pull leaves the machine. (containerd 1.6 wants the [host] table; a file
 * with only `server` is rejected as an invalid host tree.)
 */
export const REGISTRY_HOSTS_TOML = `server = "http://127.0.0.1:1"
[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
`;

/** Bridge CNI: no masquerading, routes only to the pod and service ranges (no default route). */
export function cniConfig(p: NodePaths): string {
  return JSON.stringify({
    cniVersion: '0.4.0',
    name: 'tollgate-node',
    plugins: [
      {
        type: 'bridge',
        bridge: NODE.podBridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          dataDir: p.cniIpamDir,
          ranges: [[{ subnet: NODE.podCidr, gateway: NODE.podGateway }]],
          routes: [{ dst: '198.18.0.0/16' }, { dst: NODE.serviceCidr }],
        },
      },
    ],
  }, null, 2);
}

export function kubeletConfig(p: NodePaths, caCert: string): string {
  return JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: NODE.ip,
    port: NODE.kubeletPort,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 0,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: caCert } },
    authorization: { mode: 'Webhook' },
    cgroupDriver: 'cgroupfs',
    // Pods' cgroups under the node's own, so teardown finds every container process.
    cgroupRoot: `/${NODE.cgroup}`,
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    clusterDNS: [NODE.dnsServiceIp],
    clusterDomain: NODE.clusterDomain,
    resolvConf: p.resolvConf,
    podLogsDir: p.podLogs,
    // Imported images are never collected (they cannot be pulled again).
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    evictionPressureTransitionPeriod: '5s',
    nodeStatusUpdateFrequency: '2s',
    syncFrequency: '5s',
    fileCheckFrequency: '5s',
    serializeImagePulls: false,
    // The node is small and shared; reserve nothing, and let pods start quickly.
    maxPods: 60,
    podPidsLimit: 4096,
    // Kernel settings stay as the host has them where the kubelet allows it.
    protectKernelDefaults: false,
    makeIPTablesUtilChains: true,
    shutdownGracePeriod: '0s',
    containerLogMaxSize: '10Mi',
  }, null, 2);
}

export function kubeProxyConfig(p: NodePaths): string {
  return JSON.stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clientConnection: { kubeconfig: p.adminKubeconfig },
    hostnameOverride: NODE.name,
    bindAddress: NODE.ip,
    clusterCIDR: NODE.clusterCidr,
    // kube-proxy's usual ports, on loopback only.
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    nodePortAddresses: [`${NODE.ip}/32`],
    // Leave the host's conntrack table settings alone.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    iptables: { localhostNodePorts: false, syncPeriod: '30s', minSyncPeriod: '0s' },
  }, null, 2);
}
