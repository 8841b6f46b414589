// A Gateway's proxies fed by the controller's snapshot stream, for the propagation suites and
// benches: the controller as its real binary out of cluster (chart ServiceAccount), and proxy
// processes in cluster mode, each in its own network namespace so that every one binds the
// Gateway's listener ports as a pod would. The stream is secured as deployed: the controller
// serves TLS with a certificate that also names the bridge address proxies dial, and each
// proxy holds, in its own directory, the CA from the `tollgate-ca` ConfigMap of its Gateway's
// namespace and a token of the Gateway's ServiceAccount for audience `tollgate` (what a pod
// gets from its ConfigMap volume and projected token), minted with `kubectl create token`.
//
// Network: a bridge this harness creates holds 198.18.X.1/24 (X picked free among 240..249,
// never a private range, nothing routed off the machine); the controller's stream and any
// backend run here listen on that address (the API server refuses loopback endpoints), or on
// one of 198.18.X.2-9 (backendAddress(): several backends on one port, as a Deployment's pods);
// proxy i is 198.18.X.(10+i) on a veth into its namespace, with no other route.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyName } from '../packages/controller/src/deployer/names.js';
import type { Gateway } from '../packages/controller/src/types/gateway-api.js';
import { ControllerProcess, serviceAccountKubeconfig, sumMetric, waitForObject } from './controller-process.js';
import type { Cluster } from './lib/cluster.js';
import { run } from './lib/exec.js';
import { killLiveProcesses, LoggedProcess } from './lib/logged-process.js';
import { REPO_ROOT } from './lib/tools.js';

export const PROXY_BIN = join(REPO_ROOT, 'packages/proxy/bin/tollgate.js');
const CHART = join(REPO_ROOT, 'charts/tollgate');
const SYSTEM_NS = 'tollgate-system';

/** Ports every proxy uses inside its own namespace (as in a pod). */
export const PROXY_PORTS = { admin: 15000, metrics: 15020, readiness: 15021 } as const;

/** A proxy's credentials for the stream: files, on the filesystem its namespace shares. */
export interface ProxyCredentials {
  /** The ca.crt of the `tollgate-ca` ConfigMap of the proxy's namespace. */
  readonly caFile: string;
  /** A ServiceAccount token for audience tollgate. */
  readonly tokenFile: string;
}

/** The controller's stream flags: TLS (the default), its certificate also naming `address`. */
function controllerStreamFlags(address: string): string[] {
  return [`--snapshot-tls-names=${address}`];
}

function proxyStreamFlags(c: ProxyCredentials): string[] {
  return ['--controller-ca', c.caFile, '--controller-token', c.tokenFile];
}

/** Long enough for the longest bench run: the proxy reads the token again on each reconnect. */
const TOKEN_DURATION = '24h';

function ip(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr.trim()}`);
}

/** True when this process may create bridges and network namespaces (root, with unshare and ip). */
export function canIsolateProxies(): boolean {
  return process.getuid?.() === 0 && existsSync('/usr/bin/unshare') && existsSync('/usr/bin/nsenter') && spawnSync('ip', ['-V']).status === 0;
}

/** The harness's bridge and subnet; destroy() removes the bridge and the proxies' veths. */
export class HostNet {
  /** Host ends of the veths attach() made. */
  readonly #veths: string[] = [];

  private constructor(
    readonly bridge: string,
    readonly prefix: string,
  ) {}

  /** The host's address on the bridge: where the controller's stream and backends listen. */
  get hostAddress(): string {
    return `${this.prefix}.1`;
  }

  proxyAddress(index: number): string {
    return `${this.prefix}.${10 + index}`;
  }

  /** Host addresses beyond hostAddress that backendAddress() may give out (.2 to .9; proxies start at .10). */
  static readonly BACKEND_ADDRESSES = 8;

  /**
   * Another address of the host on the bridge, `index` 0 to 7: 198.18.X.(2+index), added on
   * first use (it goes with the bridge). Backends run here listen on distinct ones, as the pods
   * of a Deployment have distinct addresses and one port, so that one EndpointSlice lists them.
   */
  backendAddress(index: number): string {
    if (!Number.isInteger(index) || index < 0 || index >= HostNet.BACKEND_ADDRESSES) throw new Error(`backend address ${index}: 0 to ${HostNet.BACKEND_ADDRESSES - 1}`);
    const address = `${this.prefix}.${2 + index}`;
    if (!this.#backendAddresses.has(address)) {
      ip(['addr', 'add', `${address}/32`, 'dev', this.bridge]);
      this.#backendAddresses.add(address);
    }
    return address;
  }

  readonly #backendAddresses = new Set<string>();

  static create(): HostNet {
    for (let x = 240; x < 250; x++) {
      const bridge = `tgsp${x}`;
      const prefix = `198.18.${x}`;
      // A subnet another run (or another suite) holds has its route: skip it.
      if (existsSync(`/sys/class/net/${bridge}`) || spawnSync('ip', ['route', 'show', `${prefix}.0/24`], { encoding: 'utf8' }).stdout.trim()) continue;
      try {
        ip(['link', 'add', bridge, 'type', 'bridge']);
      } catch {
        continue;
      }
      const net = new HostNet(bridge, prefix);
      live.add(net);
      ip(['addr', 'add', `${prefix}.1/24`, 'dev', bridge]);
      ip(['link', 'set', bridge, 'up']);
      return net;
    }
    throw new Error('no free subnet among 198.18.240.0/24..198.18.249.0/24 for the proxies (bridges tgsp240..249 all exist)');
  }

  /** Moves a veth into the namespace of `pid` and gives it proxy address `index`. */
  attach(pid: number, index: number): void {
    const host = `tgv${pid}`;
    ip(['link', 'add', host, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(pid)]);
    this.#veths.push(host);
    ip(['link', 'set', host, 'master', this.bridge, 'up']);
    const inside = (args: string[]) => {
      const r = spawnSync('nsenter', ['-t', String(pid), '-n', 'ip', ...args], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`in the namespace of ${pid}: ip ${args.join(' ')}: ${r.stderr.trim()}`);
    };
    inside(['addr', 'add', `${this.proxyAddress(index)}/24`, 'dev', 'eth0']);
    inside(['link', 'set', 'eth0', 'up']);
    inside(['link', 'set', 'lo', 'up']);
  }

  destroy(): void {
    live.delete(this);
    // A veth goes with its namespace, but the kernel frees a namespace when nothing holds it
    // any more, and after an interrupted run the veths were seen to outlive it: deleted here.
    for (const veth of this.#veths.splice(0)) if (existsSync(`/sys/class/net/${veth}`)) spawnSync('ip', ['link', 'del', veth]);
    if (existsSync(`/sys/class/net/${this.bridge}`)) spawnSync('ip', ['link', 'del', this.bridge]);
  }
}

const live = new Set<HostNet>();
const cleanUp = () => {
  killLiveProcesses();
  for (const n of live) n.destroy();
};
// Also when the run is interrupted: a signal ends the process without 'exit' handlers, and the
// bridge would outlive it. The signal is raised again so the process still ends with it.
process.once('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    cleanUp();
    process.kill(process.pid, signal);
  });
}

/** A proxy process in cluster mode, in its own network namespace. */
export class ProxyProcess extends LoggedProcess {
  private constructor(
    name: string,
    readonly address: string,
    child: ChildProcess,
    logFile: string,
  ) {
    super(name, child, logFile);
  }

  /**
   * Starts `tollgate --controller ... --gateway ...` in a new network namespace. The process
   * waits on its stdin until its interface is up, then becomes node (same pid throughout).
   * `dir` is its HOME; its credentials are files there (the filesystem is shared).
   */
  static async start(opts: { name: string; index: number; net: HostNet; controller: string; gateway: string; dir: string; podNamespace: string; credentials: ProxyCredentials; logFile: string; workers?: number }): Promise<ProxyProcess> {
    const address = opts.net.proxyAddress(opts.index);
    const args = [
      PROXY_BIN,
      `--controller=${opts.controller}`,
      `--gateway=${opts.gateway}`,
      ...proxyStreamFlags(opts.credentials),
      `--admin-addr=${address}:${PROXY_PORTS.admin}`,
      `--metrics-addr=${address}:${PROXY_PORTS.metrics}`,
      `--readiness-addr=${address}:${PROXY_PORTS.readiness}`,
      // One thread unless asked: several proxies share this machine's CPUs with the cluster.
      `--workers=${opts.workers ?? 1}`,
    ];
    const child = spawn('unshare', ['--net', '--', '/bin/sh', '-c', 'read -r _ && exec "$0" "$@"', process.execPath, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH, HOME: opts.dir, POD_NAME: opts.name, POD_NAMESPACE: opts.podNamespace },
    });
    const p = new ProxyProcess(opts.name, address, child, opts.logFile);
    await once(child, 'spawn');
    // unshare has made the namespace once it execs the shell; the shell then blocks on read.
    await waitForNamespace(p.pid);
    opts.net.attach(p.pid, opts.index);
    child.stdin.end('go\n');
    await p.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('metrics on '), 30_000);
    return p;
  }

  url(port: number, path = '/'): string {
    return `http://${this.address}:${port}${path}`;
  }

  get readinessUrl(): string {
    return `http://${this.address}:${PROXY_PORTS.readiness}/healthz/ready`;
  }

  get adminUrl(): string {
    return `http://${this.address}:${PROXY_PORTS.admin}`;
  }
}

/** Waits until `pid` is in a network namespace other than ours (unshare has run). */
async function waitForNamespace(pid: number): Promise<void> {
  const ours = spawnSync('readlink', ['/proc/self/ns/net'], { encoding: 'utf8' }).stdout.trim();
  for (let i = 0; i < 500; i++) {
    const theirs = spawnSync('readlink', [`/proc/${pid}/ns/net`], { encoding: 'utf8' }).stdout.trim();
    if (theirs && theirs !== ours) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`process ${pid} did not enter its own network namespace`);
}

export interface FleetOptions {
  /** The Gateway the proxies serve, `<namespace>/<name>`. */
  readonly gateway: string;
  /** Extra controller flags (e.g. a debounce). */
  readonly controllerArgs?: readonly string[];
  /** Threads each proxy serves on (its --workers; default 1). */
  readonly proxyWorkers?: number;
}

/**
 * The chart installed (CRDs, RBAC, GatewayClass), the controller out of cluster on its
 * ServiceAccount with the snapshot stream on the harness's bridge, and proxies started on
 * demand. stop() ends every process and removes the bridge.
 */
export class SnapshotFleet {
  readonly proxies: ProxyProcess[] = [];
  #controller: ControllerProcess | undefined;
  #streamAddress = '';
  #starts = 0;
  #proxyIndex = 0;

  private constructor(
    readonly cluster: Cluster,
    readonly net: HostNet,
    readonly opts: FleetOptions,
    readonly dir: string,
    readonly kubeconfig: string,
  ) {}

  static async start(cluster: Cluster, opts: FleetOptions): Promise<SnapshotFleet> {
    await run(cluster.tools.helm, ['install', 'tollgate', CHART, '-n', SYSTEM_NS, '--create-namespace'], { env: cluster.env });
    const dir = mkdtempSync(join(tmpdir(), 'tg-fleet-'));
    const kubeconfig = await serviceAccountKubeconfig(cluster, SYSTEM_NS, 'tollgate-controller', join(dir, 'kubeconfig'));
    const net = HostNet.create();
    const fleet = new SnapshotFleet(cluster, net, opts, dir, kubeconfig);
    try {
      await fleet.startController();
    } catch (err) {
      await fleet.stop();
      throw err;
    }
    return fleet;
  }

  get controller(): ControllerProcess {
    if (!this.#controller) throw new Error('the controller is not running');
    return this.#controller;
  }

  /** `<host>:<port>` of the snapshot stream (kept across controller restarts). */
  get streamAddress(): string {
    return this.#streamAddress;
  }

  get gatewayNamespace(): string {
    return this.opts.gateway.split('/')[0]!;
  }

  /** Starts the controller (again, on the same stream address after a stop) and waits for its caches. */
  async startController(): Promise<ControllerProcess> {
    const addr = this.#streamAddress || `${this.net.hostAddress}:0`;
    const c = await ControllerProcess.start(`controller-${++this.#starts}`, this.cluster, this.kubeconfig, [
      `--snapshot-addr=${addr}`,
      ...controllerStreamFlags(this.net.hostAddress),
      ...(this.opts.controllerArgs ?? []),
    ]);
    this.#controller = c;
    this.#streamAddress = String((await c.waitForLog((l) => l.msg === 'snapshot stream listening', 30_000)).address);
    await c.synced();
    return c;
  }

  async killController(): Promise<void> {
    await this.#controller?.stop('SIGKILL');
    this.#controller = undefined;
  }

  /** The directory of proxy `name`: its HOME and its credential files. */
  proxyDir(name: string): string {
    const dir = join(this.dir, name);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * Writes into `dir` the credentials a pod of `tokenOf` (<namespace>/<name>) would hold: the CA
   * of the `tollgate-ca` ConfigMap of `namespace` and a token of the Gateway's ServiceAccount.
   * Waits (watches, with a deadline) for the Gateway, the ConfigMap and the ServiceAccount the
   * controller makes for it. Called again, it replaces the files in place, as kubelet does.
   */
  async writeCredentials(dir: string, namespace: string, tokenOf: string, timeoutMs = 60_000): Promise<ProxyCredentials> {
    const [gwNamespace, gwName] = tokenOf.split('/') as [string, string];
    const [cm, gw] = await Promise.all([
      waitForObject<{ data?: Record<string, string> }>(this.cluster, 'configmaps', 'tollgate-ca', namespace, (o) => Boolean(o.data?.['ca.crt']), timeoutMs),
      waitForObject<Gateway>(this.cluster, 'gateways.gateway.networking.k8s.io', gwName, gwNamespace, () => true, timeoutMs),
    ]);
    const serviceAccount = proxyName(gw);
    await waitForObject(this.cluster, 'serviceaccounts', serviceAccount, gwNamespace, () => true, timeoutMs);
    const token = (
      await run(this.cluster.tools.kubectl, ['create', 'token', serviceAccount, '-n', gwNamespace, '--audience', 'tollgate', `--duration=${TOKEN_DURATION}`], { env: this.cluster.env })
    ).trim();
    const credentials = { caFile: join(dir, 'ca.crt'), tokenFile: join(dir, 'token') };
    writeFileSync(credentials.caFile, cm.data!['ca.crt']!);
    writeFileSync(credentials.tokenFile, token, { mode: 0o600 });
    return credentials;
  }

  /**
   * Starts a proxy for the fleet's Gateway (or another one), once its credentials exist. With
   * `tokenOf`, it presents a token of that Gateway's ServiceAccount instead of its own (a
   * proxy started before its Gateway exists; writeCredentials later gives it its own).
   */
  async startProxy(name = `proxy-${this.#proxyIndex}`, gateway = this.opts.gateway, tokenOf = gateway): Promise<ProxyProcess> {
    const namespace = gateway.split('/')[0]!;
    const dir = this.proxyDir(name);
    const credentials = await this.writeCredentials(dir, namespace, tokenOf);
    const p = await ProxyProcess.start({ name, index: this.#proxyIndex++, net: this.net, controller: this.#streamAddress, gateway, dir, podNamespace: namespace, credentials, logFile: join(this.cluster.dir, `${name}.log`), workers: this.opts.proxyWorkers });
    this.proxies.push(p);
    return p;
  }

  async removeProxy(p: ProxyProcess): Promise<void> {
    await p.stop();
    this.proxies.splice(this.proxies.indexOf(p), 1);
  }

  /** Version of the next snapshot of the Gateway the controller logs at or after line `fromLine`. */
  async nextVersion(fromLine: number, timeoutMs = 60_000, gateway = this.opts.gateway): Promise<string> {
    const line = await this.controller.waitForLog((l) => l.msg === 'new snapshot' && l.gateway === gateway, timeoutMs, fromLine);
    return String(line.version);
  }

  /** The version of the last snapshot of the Gateway the controller logged. */
  lastVersion(gateway = this.opts.gateway): string | null {
    const line = this.controller.lines.findLast((l) => l.msg === 'new snapshot' && l.gateway === gateway);
    return line ? String(line.version) : null;
  }

  /** Resolves once `count` proxies are connected to the stream for `gateway`. */
  async waitConnected(gateway: string, count: number, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (sumMetric(await this.controller.metrics(), 'tollgate_controller_stream_proxies', { gateway }) >= count) return;
      if (Date.now() > deadline) throw new Error(`${gateway}: ${count} proxies not connected within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** How many connected proxies last ACKed `version`, from the controller's metrics. */
  async ackedBy(version: string): Promise<number> {
    return sumMetric(await this.controller.metrics(), 'tollgate_controller_stream_acked_proxies', { gateway: this.opts.gateway, version });
  }

  /** Resolves once `count` proxies (default: all started) have ACKed `version`. */
  async waitAcked(version: string, count = this.proxies.length, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if ((await this.ackedBy(version)) >= count) return;
      if (Date.now() > deadline) throw new Error(`version ${version}: ${await this.ackedBy(version)} of ${count} proxies ACKed within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * Resolves with the Gateway's newest version once `count` proxies ACKed it (one apply of
   * several objects can make more than one version; a proxy may only ever see the last).
   */
  async waitSettled(count = this.proxies.length, timeoutMs = 60_000, gateway = this.opts.gateway): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const version = this.lastVersion(gateway);
      if (version !== null && sumMetric(await this.controller.metrics(), 'tollgate_controller_stream_acked_proxies', { gateway, version }) >= count) return version;
      if (Date.now() > deadline) throw new Error(`${gateway}: version ${version} not ACKed by ${count} proxies within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.proxies.map((p) => p.stop('SIGKILL')));
    await this.#controller?.stop('SIGKILL');
    this.net.destroy();
  }
}
