// What the e2e node changes on the host, and how it is undone. Everything here is synchronous
// so that teardown also runs from a process 'exit' handler, and idempotent so that a later
// start can finish the teardown of a run that was killed.
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE } from './addresses.js';
import { isAlive, sh, shQuiet, sleepSync } from './sh.js';

const CGROUP_ROOT = '/sys/fs/cgroup';

/** Kernel settings the kubelet and kube-proxy may change; restored to their values before the node. */
export const WATCHED_SYSCTLS = [
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
  'net.ipv4.ip_forward',
  'net.ipv4.conf.all.route_localnet',
  'net.bridge.bridge-nf-call-iptables',
  'net.bridge.bridge-nf-call-ip6tables',
  'net.netfilter.nf_conntrack_max',
  'net.netfilter.nf_conntrack_tcp_timeout_established',
  'net.netfilter.nf_conntrack_tcp_timeout_close_wait',
] as const;

/** Paths outside the node's directory that containerd or the kubelet create. */
const WATCHED_PATHS = ['/run/containerd', '/run/containerd/s', '/run/containerd/fifo', '/var/log/containers', '/run/netns', '/var/run/netns'];

export interface HostSnapshot {
  sysctls: Record<string, string | null>;
  /** Which WATCHED_PATHS existed. */
  paths: Record<string, boolean>;
  /** nft tables (`family name`). */
  nftTables: string[];
}

function sysctlPath(key: string): string {
  return join('/proc/sys', ...key.split('.'));
}

function readSysctl(key: string): string | null {
  try {
    return readFileSync(sysctlPath(key), 'utf8').trim();
  } catch {
    return null;
  }
}

export function nftTables(): string[] {
  return shQuiet('nft', ['list', 'tables']).split('\n').map((l) => l.replace(/^table /, '').trim()).filter(Boolean).sort();
}

/** Taken before the node starts; teardown restores what it records. */
export function takeSnapshot(): HostSnapshot {
  return {
    sysctls: Object.fromEntries(WATCHED_SYSCTLS.map((k) => [k, readSysctl(k)])),
    paths: Object.fromEntries(WATCHED_PATHS.map((p) => [p, existsSync(p)])),
    nftTables: nftTables(),
  };
}

// ---------------------------------------------------------------------------------------------
// Network

export function setUpNetwork(): void {
  const ip = (...args: string[]) => sh('ip', args);
  // A bridge with no ports holds the node address (no dummy interfaces on every kernel).
  ip('link', 'add', NODE.hostBridge, 'type', 'bridge');
  ip('addr', 'add', `${NODE.ip}/32`, 'dev', NODE.hostBridge);
  ip('link', 'set', NODE.hostBridge, 'up');
  // ClusterIPs are reached through kube-proxy's rules, never through the default route.
  ip('route', 'add', NODE.serviceCidr, 'dev', NODE.hostBridge, 'src', NODE.ip);
  ip('route', 'add', 'unreachable', NODE.unreachable);
  writeFileSync(sysctlPath('net.ipv4.ip_forward'), '1');
  writeFileSync(sysctlPath('net.bridge.bridge-nf-call-iptables'), '1');
}

function linkExists(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`);
}

function tearDownNetwork(errors: string[]): void {
  // Pod interfaces on the pod bridge (their peers die with the pods' network namespaces).
  if (linkExists(NODE.podBridge)) {
    for (const port of readdirSync(`/sys/class/net/${NODE.podBridge}/brif`, { withFileTypes: false })) {
      shQuiet('ip', ['link', 'del', String(port)]);
    }
  }
  for (const link of [NODE.podBridge, NODE.hostBridge]) {
    if (linkExists(link)) {
      try {
        sh('ip', ['link', 'del', link]);
      } catch (err) {
        errors.push(`ip link del ${link}: ${(err as Error).message}`);
      }
    }
  }
  // The service route goes with tg0; the unreachable route is deleted explicitly.
  while (sh('ip', ['route', 'show', 'type', 'unreachable', NODE.unreachable]).trim()) {
    sh('ip', ['route', 'del', 'unreachable', NODE.unreachable]);
  }
  shQuiet('ip', ['route', 'del', NODE.serviceCidr]);
}

// ---------------------------------------------------------------------------------------------
// iptables / nftables

/**
 * Removes every KUBE-* chain (kube-proxy's and the kubelet's) and the rules that jump to them,
 * from iptables and ip6tables. Nothing else on the host uses that prefix.
 */
function removeKubeChains(errors: string[]): void {
  for (const bin of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle', 'raw']) {
      const saved = shQuiet(`${bin}-save`, ['-t', table]);
      const chains = [...saved.matchAll(/^:(KUBE-[^\s]+)/gm)].map((m) => m[1]!);
      if (!chains.length) continue;
      // Rules in any chain that jump to a KUBE chain, deleted by their exact spec.
      for (const line of saved.split('\n')) {
        const m = /^-A (\S+) (.*-j (KUBE-\S+).*)$/.exec(line);
        if (m && !m[1]!.startsWith('KUBE-')) shQuiet(bin, ['-t', table, '-D', m[1]!, ...splitRule(m[2]!)]);
      }
      for (const chain of chains) shQuiet(bin, ['-t', table, '-F', chain]);
      for (const chain of chains) {
        try {
          sh(bin, ['-t', table, '-X', chain]);
        } catch (err) {
          errors.push(`${bin} -t ${table} -X ${chain}: ${(err as Error).message.trim()}`);
        }
      }
    }
  }
}

/** Splits an iptables-save rule into arguments (quoted comments stay one argument). */
export function splitRule(rule: string): string[] {
  const args: string[] = [];
  for (const m of rule.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)) args.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!);
  return args;
}

/** Deletes nft tables that did not exist before the node and hold no rule (iptables-nft leaves them behind). */
function removeNewEmptyNftTables(before: readonly string[]): void {
  for (const table of nftTables()) {
    if (before.includes(table)) continue;
    const [family, name] = table.split(' ');
    const listing = shQuiet('nft', ['list', 'table', family!, name!]);
    const rules = listing.split('\n').map((l) => l.trim()).filter((l) => l && !/^(table |chain |type |policy |flags |\})/.test(l));
    if (!rules.length) shQuiet('nft', ['delete', 'table', family!, name!]);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes and cgroups (v1: one directory per hierarchy)

function hierarchies(): string[] {
  try {
    return readdirSync(CGROUP_ROOT).filter((h) => existsSync(join(CGROUP_ROOT, h, 'cgroup.procs')));
  } catch {
    return [];
  }
}

/** The node's cgroup in the pids hierarchy: every process the node starts is in it or below. */
export function nodeCgroup(hierarchy = 'pids'): string {
  return join(CGROUP_ROOT, hierarchy, NODE.cgroup);
}

export function createNodeCgroups(): void {
  for (const h of hierarchies()) {
    sh('mkdir', ['-p', join(CGROUP_ROOT, h, NODE.cgroup, 'system')]);
  }
  // cpuset children start empty; they must inherit their parent's CPUs and memory nodes.
  const cpuset = join(CGROUP_ROOT, 'cpuset');
  if (existsSync(join(cpuset, 'cpuset.cpus'))) {
    for (const dir of [join(cpuset, NODE.cgroup), join(cpuset, NODE.cgroup, 'system')]) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const parent = readFileSync(join(dir, '..', f), 'utf8').trim();
        writeFileSync(join(dir, f), parent);
      }
    }
  }
}

function cgroupDirs(root: string): string[] {
  if (!existsSync(root)) return [];
  const out: string[] = [root];
  for (const e of readdirSync(root, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...cgroupDirs(join(root, e.name)));
  }
  return out;
}

/** Pids in the node's cgroup tree (pids hierarchy). */
export function nodePids(): number[] {
  const pids: number[] = [];
  for (const dir of cgroupDirs(nodeCgroup())) {
    try {
      for (const l of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (l) pids.push(Number(l));
    } catch {
      // removed meanwhile
    }
  }
  return pids;
}

/**
 * Kills every process of the node (control plane, containerd, shims, containers) until the
 * tree is empty, then removes the cgroups in every hierarchy, deepest first.
 */
function killNodeProcesses(errors: string[], ownPids: readonly number[]): void {
  for (const pid of ownPids) if (isAlive(pid)) shQuiet('kill', ['-KILL', String(pid)]);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const pids = nodePids();
    if (!pids.length) break;
    if (Date.now() > deadline) {
      errors.push(`processes left in ${nodeCgroup()}: ${pids.join(' ')}`);
      break;
    }
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    sleepSync(100);
  }
  for (const h of hierarchies()) {
    const dirs = cgroupDirs(join(CGROUP_ROOT, h, NODE.cgroup)).reverse();
    for (const dir of dirs) {
      for (let i = 0; ; i++) {
        try {
          rmdirSync(dir);
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') break;
          if (i >= 50) {
            errors.push(`rmdir ${dir}: ${code}`);
            break;
          }
          sleepSync(100);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Files outside the node's directory

function restorePaths(snapshot: HostSnapshot, nodeDir: string): void {
  // Symlinks the kubelet made to container logs inside the node's directory.
  if (existsSync('/var/log/containers')) {
    for (const name of readdirSync('/var/log/containers')) {
      const p = join('/var/log/containers', name);
      try {
        if (readlinkSync(p).startsWith(nodeDir)) rmSync(p, { force: true });
      } catch {
        // not a symlink
      }
    }
  }
  // Directories that did not exist before and are left empty (containerd shims' sockets and
  // fifos, the netns mount point directory).
  for (const p of ['/run/containerd/s', '/run/containerd/fifo', '/run/containerd', '/var/log/containers', '/run/netns']) {
    if (snapshot.paths[p] || !existsSync(p)) continue;
    try {
      if (statSync(p).isDirectory()) rmSync(p, { recursive: true, force: true });
    } catch {
      // in use by someone else: leave it
    }
  }
}

/** Mount points on the host under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((p): p is string => !!p);
  return points.filter((p) => p === dir || p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
}

/**
 * The node's mounts live in its own mount namespace and vanish with its processes; this is the
 * safety net before the directory is deleted (deleting through a mount would reach its source).
 */
function unmountUnder(dir: string, errors: string[]): void {
  for (const p of mountsUnder(dir)) shQuiet('umount', ['-l', p]);
  const left = mountsUnder(dir);
  if (left.length) {
    errors.push(`still mounted: ${left.join(' ')}`);
    throw new Error('mounts left; the node directory is kept');
  }
}

function restoreSysctls(snapshot: HostSnapshot, errors: string[]): void {
  for (const [key, value] of Object.entries(snapshot.sysctls)) {
    if (value === null || readSysctl(key) === value) continue;
    try {
      writeFileSync(sysctlPath(key), value);
    } catch (err) {
      errors.push(`sysctl ${key}=${value}: ${(err as Error).message}`);
    }
  }
}

export interface TeardownInput {
  snapshot: HostSnapshot;
  nodeDir: string;
  /** Pids of processes the harness started (also killed when outside the cgroup). */
  pids: readonly number[];
  /** kube-proxy binary and config, for `kube-proxy --cleanup`. */
  kubeProxy?: { bin: string; config: string };
  keepDir: boolean;
}

/** Undoes everything the node did. Returns what could not be undone (empty when clean). */
export function tearDownHost(input: TeardownInput): string[] {
  const errors: string[] = [];
  const timings: string[] = [];
  const step = (name: string, fn: () => void) => {
    const started = Date.now();
    try {
      fn();
    } catch (err) {
      errors.push(`${name}: ${(err as Error).message}`);
    }
    timings.push(`${name} ${Date.now() - started} ms`);
  };
  step('processes', () => killNodeProcesses(errors, input.pids));
  if (input.kubeProxy && existsSync(input.kubeProxy.bin)) {
    step('kube-proxy --cleanup', () => shQuiet(input.kubeProxy!.bin, ['--cleanup', `--config=${input.kubeProxy!.config}`]));
  }
  step('iptables', () => removeKubeChains(errors));
  step('nftables', () => removeNewEmptyNftTables(input.snapshot.nftTables));
  step('network', () => tearDownNetwork(errors));
  step('sysctls', () => restoreSysctls(input.snapshot, errors));
  step('paths', () => restorePaths(input.snapshot, input.nodeDir));
  step('mounts', () => unmountUnder(input.nodeDir, errors));
  if (!input.keepDir && !mountsUnder(input.nodeDir).length) step('node directory', () => rmSync(input.nodeDir, { recursive: true, force: true }));
  if (process.env.TOLLGATE_NODE_TIMINGS) process.stderr.write(`e2e node teardown: ${timings.join(', ')}\n`);
  return errors;
}

// ---------------------------------------------------------------------------------------------
// A fuller picture of the host, for tests that check teardown left nothing behind.

export interface HostPicture {
  links: string[];
  routes: string[];
  iptables: string;
  ip6tables: string;
  nftTables: string[];
  mounts: string[];
  sysctls: Record<string, string | null>;
  paths: Record<string, boolean>;
  cgroups: string[];
}

/** iptables-save without its comments and packet counters. */
function rules(bin: string): string {
  return shQuiet(`${bin}-save`, []).split('\n').filter((l) => !l.startsWith('#')).map((l) => l.replace(/ \[\d+:\d+\]$/, '')).join('\n');
}

/**
 * Links of the snapshot-propagation harness (bridges tgsp240..249 and their routes, veths
 * tgv<pid>): that suite runs in the default project, beside the machine suites, so it may add
 * or remove them between a teardown check's two pictures. The node never uses these names.
 */
const OTHER_SUITES_LINK = /^tg(sp|v)\d+$/;
const OTHER_SUITES_ROUTE = / dev tg(sp|v)\d+ /;

export function hostPicture(): HostPicture {
  return {
    links: readdirSync('/sys/class/net')
      .filter((l) => !OTHER_SUITES_LINK.test(l))
      .sort(),
    routes: shQuiet('ip', ['-4', 'route', 'show', 'table', 'all'])
      .split('\n')
      .filter((r) => r && !OTHER_SUITES_ROUTE.test(`${r} `))
      .sort(),
    iptables: rules('iptables'),
    ip6tables: rules('ip6tables'),
    nftTables: nftTables(),
    mounts: readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((p): p is string => !!p).sort(),
    sysctls: Object.fromEntries(WATCHED_SYSCTLS.map((k) => [k, readSysctl(k)])),
    paths: Object.fromEntries(WATCHED_PATHS.map((p) => [p, existsSync(p)])),
    cgroups: hierarchies().filter((h) => existsSync(join(CGROUP_ROOT, h, NODE.cgroup))),
  };
}

/** Processes whose command line names `text` (e.g. the node's directory). */
export function processesMentioning(text: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(text) && Number(pid) !== process.pid) found.push(`${pid} ${cmd.slice(0, 200)}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}
