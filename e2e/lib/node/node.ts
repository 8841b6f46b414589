// A real Kubernetes node for the e2e tests, on this machine: etcd and kube-apiserver (serving on
// the node address, which the `kubernetes` Service points at), kube-controller-manager,
// kube-scheduler, containerd with runc and the bridge CNI plugin, the kubelet, kube-proxy
// (iptables) and CoreDNS as cluster DNS. Images are imported, never pulled. One node per
// machine (a lock under /run); stop() — or the process exiting, or a later start finding this
// one's owner dead — removes every process, mount, interface, route, iptables rule and cgroup
// it made and restores the kernel settings it changed.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueClientCert, makeCerts } from '../certs.js';
import { applyCrds, checkKubectlSkew, kubeconfigYaml, readyz } from '../cluster.js';
import { exec, run, type ExecOptions, type ExecResult } from '../exec.js';
import { gatewayApiCrdDir, nodeToolPaths, REPO_ROOT, toolPaths, type NodeTools, type Tools } from '../tools.js';
import { NODE } from './addresses.js';
import { apiReader, nodeReady, rolledOut } from './api.js';
import { containerdConfig, cniConfig, kubeletConfig, kubeProxyConfig, nodePaths, REGISTRY_HOSTS_TOML, type NodePaths } from './config.js';
import { corednsManifest } from './coredns.js';
import { createNodeCgroups, setUpNetwork, takeSnapshot, tearDownHost, type TeardownInput } from './host.js';
import { COREDNS_IMAGE, nodeImageArchives, ociArchive, PAUSE_IMAGE, projectImage } from './images.js';
import { acquireNodeLock, recordState, releaseNodeLock } from './lock.js';
import { inOwnMountNamespace, spawnInNode, waitUntil as waitUntilAny, type NodeProcess } from './processes.js';

export interface Node {
  /** Admin kubeconfig (client certificate in system:masters), server https://198.18.255.1:6443. */
  kubeconfig: string;
  server: string;
  dir: string;
  tools: Tools & NodeTools;
  /** KUBECONFIG and private kubectl/helm caches. */
  env: NodeJS.ProcessEnv;
  /** Milliseconds from the start call to the node Ready with cluster DNS serving. */
  startMs: number;
  /** Milliseconds from the start call to each step (API server ready, the sandbox and CoreDNS images imported, node Ready, DNS ready, every image imported, CRDs established). */
  marks: Record<string, number>;
  kubectl(args: readonly string[], opts?: ExecOptions): Promise<ExecResult>;
  helm(args: readonly string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Imports an image from podman's storage (e.g. one `pnpm images` built) into the node. */
  importImage(image: string): Promise<void>;
  stop(): Promise<void>;
}

export interface NodeOptions {
  /** Project images to import (default: tollgate and mock-llm, and tollgate-controller when its package exists). */
  images?: readonly string[];
  /** Apply the Gateway API CRDs (default true) and Tollgate's own (default true). */
  gatewayApi?: boolean;
  /**
   * Which channel of the Gateway API CRDs (default standard). The experimental channel carries
   * the fields some features need (an HTTPRoute rule's `retry` at v1.6.1); the conformance run
   * installs it.
   */
  gatewayApiChannel?: 'standard' | 'experimental';
  tollgateCrds?: boolean;
  /** How long to wait for another run's node to stop (default 15 min). */
  lockTimeoutMs?: number;
}

let active: { input: TeardownInput; stopped: boolean } | undefined;

/** Tears the node down; returns what could not be undone (empty when clean). */
function tearDownActive(): string[] {
  if (!active || active.stopped) return [];
  active.stopped = true;
  const errors = tearDownHost(active.input);
  releaseNodeLock();
  if (errors.length) process.stderr.write(`e2e node teardown left:\n  ${errors.join('\n  ')}\n`);
  return errors;
}

// The test process ending without stop() (a crash, an interrupted run): teardown is synchronous,
// so it also runs here. A SIGKILL cannot be caught; the next start then finishes the teardown.
process.once('exit', () => tearDownActive());
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    tearDownActive();
    process.kill(process.pid, signal);
  });
}

function defaultImages(): string[] {
  const images = [projectImage('tollgate'), projectImage('mock-llm')];
  try {
    images.push(projectImage('tollgate-controller'));
  } catch {
    // no controller package in this checkout
  }
  return images;
}

export async function startNode(opts: NodeOptions = {}): Promise<Node> {
  const started = Date.now();
  const tools = { ...toolPaths(), ...nodeToolPaths() };
  const images = opts.images ?? defaultImages();
  // Archives first (podman save is slow the first time), before the lock is held.
  const archives = await Promise.all(images.map(async (image) => ({ image, file: await ociArchive(image) })));
  const archivesMs = Date.now() - started;

  await acquireNodeLock(opts.lockTimeoutMs ?? 15 * 60_000, (line) => process.stderr.write(`${line}\n`));
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-node-'));
  const paths = nodePaths(dir);
  const input: TeardownInput = {
    snapshot: takeSnapshot(),
    nodeDir: dir,
    pids: [],
    kubeProxy: { bin: tools.kubeProxy, config: paths.kubeProxyConfig },
    keepDir: !!process.env.TOLLGATE_E2E_KEEP,
  };
  // Recorded before the host is touched: whoever finds this lock with its owner dead undoes it.
  recordState(input);
  active = { input, stopped: false };
  const stop = async () => {
    const errors = tearDownActive();
    if (errors.length) throw new Error(`e2e node teardown left:\n  ${errors.join('\n  ')}`);
  };
  try {
    createNodeCgroups();
    setUpNetwork();
    const marks: Record<string, number> = { archives: archivesMs, lock: Date.now() - started };
    const node = await bringUp(dir, paths, tools, archives, opts, (name) => (marks[name] = Date.now() - started));
    node.startMs = Date.now() - started;
    node.marks = marks;
    node.stop = stop;
    return node;
  } catch (err) {
    tearDownActive();
    throw err;
  }
}

async function bringUp(dir: string, p: NodePaths, tools: Tools & NodeTools, archives: { image: string; file: string }[], opts: NodeOptions, mark: (name: string) => void): Promise<Node> {
  const certs = await makeCerts(dir, { extraServingIps: [NODE.ip, NODE.kubernetesServiceIp] });
  const kubeletCert = await issueClientCert(certs, dir, 'kubelet', `/O=system:nodes/CN=system:node:${NODE.name}`);
  const server = `https://${NODE.ip}:${NODE.apiPort}`;
  writeFileSync(p.adminKubeconfig, kubeconfigYaml(server, certs), { mode: 0o600 });
  writeFileSync(p.kubeletKubeconfig, kubeconfigYaml(server, { ...certs, adminCert: kubeletCert.cert, adminKey: kubeletCert.key }), { mode: 0o600 });
  for (const d of [p.registryHosts + '/_default', p.cniConfDir, p.cniIpamDir, p.kubeletRoot, p.podLogs, join(dir, 'etcd')]) mkdirSync(d, { recursive: true });
  writeFileSync(join(p.registryHosts, '_default', 'hosts.toml'), REGISTRY_HOSTS_TOML);
  writeFileSync(p.containerdConfig, containerdConfig(p, PAUSE_IMAGE));
  writeFileSync(join(p.cniConfDir, '10-tollgate-node.conflist'), cniConfig(p));
  // Pods with dnsPolicy Default get no nameserver from the host: names outside the cluster stay unresolved.
  writeFileSync(p.resolvConf, '');
  writeFileSync(p.kubeletConfig, kubeletConfig(p, certs.caCert));
  writeFileSync(p.kubeProxyConfig, kubeProxyConfig(p));

  const procs: NodeProcess[] = [];
  const start = (name: string, file: string, args: string[], o = {}) => {
    const proc = spawnInNode(dir, name, file, args, o);
    procs.push(proc);
    return proc;
  };
  const waitUntil = (what: string, p: NodeProcess, probe: () => Promise<boolean> | boolean, timeoutMs: number) => waitUntilAny(what, p, probe, timeoutMs, procs);

  // etcd and kube-apiserver.
  const etcd = start('etcd', tools.etcd, [
    '--name=default', `--data-dir=${join(dir, 'etcd')}`,
    '--listen-client-urls=http://127.0.0.1:2379', '--advertise-client-urls=http://127.0.0.1:2379',
    '--listen-peer-urls=http://127.0.0.1:2380', '--initial-advertise-peer-urls=http://127.0.0.1:2380',
    '--initial-cluster=default=http://127.0.0.1:2380', '--unsafe-no-fsync=true', '--log-level=warn',
  ]);
  // The holder of the node's mount namespace: containerd and the kubelet run in it, so their
  // mounts (container root filesystems, network namespaces, volumes) never appear on the host
  // and vanish with the namespace. tmpfs over the host paths they write to outside their
  // configured directories (shim sockets, netns files, CNI caches, container log links), and
  // over containerd's and the kubelet's own directories: unpacked images are many small files,
  // which would take longer to delete from disk than the whole node takes to start.
  const privatePaths = ['/run/netns', '/run/containerd', '/var/lib/cni', '/var/log/containers', p.containerdRoot, p.containerdState, p.kubeletRoot];
  const holder = start('mount-namespace', 'unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c',
    `for d in ${privatePaths.join(' ')}; do mkdir -p "$d" && mount -t tmpfs -o mode=0755 tollgate-node "$d" || exit 1; done; exec sleep infinity`]);
  await waitUntil('etcd health', etcd, async () => {
    const res = await fetch('http://127.0.0.1:2379/health');
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  }, 30_000);

  const apiserver = start('kube-apiserver', tools.kubeApiserver, [
    `--advertise-address=${NODE.ip}`, `--bind-address=${NODE.ip}`, `--secure-port=${NODE.apiPort}`,
    '--etcd-servers=http://127.0.0.1:2379',
    `--cert-dir=${join(dir, 'apiserver-certs')}`,
    `--tls-cert-file=${certs.servingCert}`, `--tls-private-key-file=${certs.servingKey}`,
    `--client-ca-file=${certs.caCert}`,
    `--kubelet-client-certificate=${certs.adminCert}`, `--kubelet-client-key=${certs.adminKey}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--authorization-mode=Node,RBAC',
    '--allow-privileged=true',
    `--service-cluster-ip-range=${NODE.serviceCidr}`,
    `--service-node-port-range=30000-32767`,
    `--service-account-issuer=https://kubernetes.default.svc.${NODE.clusterDomain}`,
    `--service-account-key-file=${certs.saPub}`,
    `--service-account-signing-key-file=${certs.saKey}`,
    '--v=1',
  ]);
  // containerd, in the node's mount namespace; then the images.
  await waitUntil('the node mount namespace', holder, () => inOwnMountNamespace(holder.child.pid!) && readComm(holder.child.pid!) === 'sleep', 10_000);
  const ns = { mountNamespaceOf: holder.child.pid! };
  const containerd = start('containerd', tools.containerd, ['--config', p.containerdConfig, '--log-level', 'warn'], ns);
  const ctr = (args: string[]) => run(tools.ctr, ['--address', p.containerdSocket, '--namespace', 'k8s.io', ...args], { timeoutMs: 300_000 });
  await waitUntil('containerd', containerd, async () => (await exec(tools.ctr, ['--address', p.containerdSocket, 'version'])).code === 0, 30_000);
  const importArchive = async (file: string, name: string, aliases: readonly string[] = []) => {
    // The archive names its image (org.opencontainers.image.ref.name); `name` is what it must carry.
    await ctr(['images', 'import', file]);
    if (!(await ctr(['images', 'ls', '-q'])).split('\n').includes(name)) throw new Error(`${file} did not import as ${name}`);
    for (const alias of aliases) await ctr(['images', 'tag', '--force', name, alias]);
  };
  // Imported while the API server starts. The kubelet needs only the sandbox (pause) and
  // CoreDNS images to bring the node up; the larger ones (echo-basic, the project's) keep
  // importing meanwhile and are awaited before the node is handed to the tests.
  const neededFirst = (a: { name: string }) => a.name === PAUSE_IMAGE || a.name === COREDNS_IMAGE;
  const nodeArchives = nodeImageArchives(tools.nodeImages);
  const nodeUpImages = Promise.all(nodeArchives.filter(neededFirst).map((a) => importArchive(a.file, a.name, a.aliases)));
  const otherImages = Promise.all([
    ...nodeArchives.filter((a) => !neededFirst(a)).map((a) => importArchive(a.file, a.name, a.aliases)),
    ...archives.map((a) => importArchive(a.file, a.image)),
  ]);
  // A rejection is awaited below; until then it must not count as unhandled.
  nodeUpImages.catch(() => undefined);
  otherImages.catch(() => undefined);

  await waitUntil('kube-apiserver /readyz', apiserver, () => readyz(NODE.apiPort, certs, NODE.ip), 90_000);
  mark('apiserver');

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KUBECONFIG: p.adminKubeconfig,
    KUBECACHEDIR: join(dir, 'kube-cache'),
    HELM_CACHE_HOME: join(dir, 'helm', 'cache'),
    HELM_CONFIG_HOME: join(dir, 'helm', 'config'),
    HELM_DATA_HOME: join(dir, 'helm', 'data'),
  };
  const kubectl = (args: readonly string[], o: ExecOptions = {}) => exec(tools.kubectl, args, { env, ...o });
  await checkKubectlSkew({ tools, env });

  const common = [`--kubeconfig=${p.adminKubeconfig}`, '--leader-elect=false'];
  start('kube-controller-manager', tools.kubeControllerManager, [
    ...common, '--bind-address=127.0.0.1', '--secure-port=0',
    '--allocate-node-cidrs', `--cluster-cidr=${NODE.clusterCidr}`, '--node-cidr-mask-size=24',
    `--service-cluster-ip-range=${NODE.serviceCidr}`,
    '--use-service-account-credentials',
    `--service-account-private-key-file=${certs.saKey}`,
    `--root-ca-file=${certs.caCert}`,
    '--controllers=*,-cloud-node-lifecycle',
    '--v=1',
  ]);
  start('kube-scheduler', tools.kubeScheduler, [...common, '--bind-address=127.0.0.1', '--secure-port=0', '--v=1']);
  // The CRDs need only the API server: applied while the node comes up.
  const crds = (async () => {
    if (opts.gatewayApi !== false) await applyCrds({ tools, env }, opts.gatewayApiChannel === 'experimental' ? gatewayApiCrdDir('experimental') : tools.gatewayApiCrds);
    if (opts.tollgateCrds !== false) await applyCrds({ tools, env }, join(REPO_ROOT, 'crds'));
  })();
  crds.catch(() => undefined);
  await nodeUpImages;
  mark('nodeImages');

  const kubelet = start('kubelet', tools.kubelet, [
    `--config=${p.kubeletConfig}`, `--kubeconfig=${p.kubeletKubeconfig}`,
    `--hostname-override=${NODE.name}`, `--node-ip=${NODE.ip}`,
    `--root-dir=${p.kubeletRoot}`, `--cert-dir=${join(p.kubeletRoot, 'pki')}`,
    '--v=1',
  ], ns);
  start('kube-proxy', tools.kubeProxy, [`--config=${p.kubeProxyConfig}`, '--v=1']);

  const api = apiReader(NODE.ip, NODE.apiPort, certs);
  try {
    await waitUntil(`node ${NODE.name} Ready`, kubelet, async () => nodeReady(await api.get(`/api/v1/nodes/${NODE.name}`)), 120_000);
    mark('nodeReady');
    await waitUntil('the default ServiceAccount', apiserver, async () => (await api.get('/api/v1/namespaces/default/serviceaccounts/default')) !== undefined, 60_000);
    await run(tools.kubectl, ['apply', '--server-side', '-f', '-'], { env, input: corednsManifest(COREDNS_IMAGE) });
    await waitUntil('CoreDNS available', kubelet, async () => rolledOut(await api.get('/apis/apps/v1/namespaces/kube-system/deployments/coredns')), 120_000);
    mark('dns');
  } finally {
    api.close();
  }
  await otherImages;
  mark('images');
  await crds;
  mark('crds');

  return {
    kubeconfig: p.adminKubeconfig,
    server,
    dir,
    tools,
    env,
    startMs: 0,
    marks: {},
    kubectl,
    helm: (args, o = {}) => exec(tools.helm, args, { env, ...o }),
    importImage: async (image) => importArchive(await ociArchive(image), image),
    stop: async () => undefined,
  };
}

function readComm(pid: number): string {
  try {
    return readFileSyncTrim(`/proc/${pid}/comm`);
  } catch {
    return '';
  }
}

function readFileSyncTrim(path: string): string {
  return readFileSync(path, 'utf8').trim();
}
