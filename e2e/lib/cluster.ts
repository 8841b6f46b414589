// A real Kubernetes control plane for tests: etcd and kube-apiserver on loopback, started the
// way controller-runtime's envtest starts them (client-certificate admin, RBAC, the
// ServiceAccount admission plugin off, advertise address 127.0.0.1), with the Gateway API
// CRDs applied. stop() kills both processes and removes every file, also after a failure.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdArgs, onFreePorts } from '@tollgate/testkit';
import { makeCerts, type ClusterCerts } from './certs.js';
import { exec, run, type ExecOptions, type ExecResult } from './exec.js';
import { missingTools, toolPaths, INSTALL_COMMAND, REPO_ROOT, VERSIONS, type Tools } from './tools.js';

export interface Cluster {
  /** Path of an admin kubeconfig (client certificate in system:masters). */
  kubeconfig: string;
  server: string;
  dir: string;
  /** The cluster's CA, the API server's serving certificate, the admin's client certificate. */
  certs: ClusterCerts;
  tools: Tools;
  /** Environment for kubectl and helm: KUBECONFIG, and helm/kubectl caches inside dir. */
  env: NodeJS.ProcessEnv;
  kubectl(args: readonly string[], opts?: ExecOptions): Promise<ExecResult>;
  helm(args: readonly string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Stops kube-apiserver and starts it again on the same port and etcd (data kept). */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Apply the Gateway API CRDs (default true). */
  gatewayApi?: boolean;
  /** Apply Tollgate's own CRDs from crds/ (default true). */
  tollgateCrds?: boolean;
}

const live = new Set<ChildProcess>();
const killAll = () => {
  for (const child of live) child.kill('SIGKILL');
};
// Last resort when the test process ends without stop(): a crash, or the worker being
// interrupted or terminated (the signal is re-raised so the process still ends with it).
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAll();
    process.kill(process.pid, signal);
  });
}

/** Per process started here: resolves once everything it wrote is in its log file. */
const logged = new WeakMap<ChildProcess, Promise<void>>();

function startProcess(name: string, file: string, args: string[], dir: string): ChildProcess {
  const log = createWriteStream(join(dir, `${name}.log`));
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  // Both streams into one file: it ends once both have closed ('close'), not when the first ends
  // (which lost the other's last lines, the ones that say why a process exited).
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  logged.set(child, new Promise<void>((resolve) => child.once('close', () => log.end(resolve))));
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export function logTail(dir: string, name: string, lines = 40): string {
  try {
    return readFileSync(join(dir, `${name}.log`), 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Polls `probe` until it returns true; fails early when `child` exits. */
export async function waitFor(what: string, child: ChildProcess, probe: () => Promise<boolean>, timeoutMs: number, dir: string, log: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      // Its last lines (a port taken: onFreePorts starts again on others) may still be on their
      // way; a pipe some child of it holds open does not keep the error back for long.
      await Promise.race([logged.get(child), new Promise((r) => setTimeout(r, 2_000).unref())]);
      throw new Error(`${log} exited (${child.exitCode ?? child.signalCode}) before ${what}:\n${logTail(dir, log)}`);
    }
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}:\n${logTail(dir, log)}`);
}

export function readyz(port: number, certs: ClusterCerts, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      {
        host,
        port,
        path: '/readyz',
        ca: readFileSync(certs.caCert),
        cert: readFileSync(certs.adminCert),
        key: readFileSync(certs.adminKey),
        timeout: 2_000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

export function kubeconfigYaml(server: string, certs: ClusterCerts): string {
  // JSON is valid YAML; kubectl and helm read either.
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'tollgate-e2e', cluster: { server, 'certificate-authority': certs.caCert } }],
      users: [{ name: 'admin', user: { 'client-certificate': certs.adminCert, 'client-key': certs.adminKey } }],
      contexts: [{ name: 'tollgate-e2e', context: { cluster: 'tollgate-e2e', user: 'admin', namespace: 'default' } }],
      'current-context': 'tollgate-e2e',
    },
    null,
    2,
  );
}

/** Minor version of a Kubernetes gitVersion such as v1.36.3. */
export function minorOf(gitVersion: string): number {
  const m = /^v1\.(\d+)\./.exec(gitVersion);
  if (!m) throw new Error(`not a Kubernetes version: ${gitVersion}`);
  return Number(m[1]);
}

/**
 * Starts a cluster. etcd and kube-apiserver must be told their ports: they are probed free
 * just before use, and if another process takes one in between (suites start in parallel),
 * the start is retried on new ports.
 */
export function startCluster(opts: StartOptions = {}): Promise<Cluster> {
  return onFreePorts(3, (ports) => startOnce(opts, ports as [number, number, number]), { attempts: 3 });
}

async function startOnce(opts: StartOptions, [etcdClient, etcdPeer, apiPort]: [number, number, number]): Promise<Cluster> {
  const tools = toolPaths();
  const missing = missingTools(tools);
  if (missing.length) throw new Error(`e2e tools missing; run \`${INSTALL_COMMAND}\`:\n  ${missing.join('\n  ')}`);

  const dir = mkdtempSync(join(tmpdir(), 'tollgate-e2e-'));
  const procs: ChildProcess[] = [];
  const stop = async () => {
    for (const p of procs.reverse()) await stopProcess(p);
    if (!process.env.TOLLGATE_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const certs = await makeCerts(dir);

    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const peerUrl = `http://127.0.0.1:${etcdPeer}`;
    const etcd = startProcess('etcd', tools.etcd, etcdArgs(join(dir, 'etcd'), etcdUrl, peerUrl), dir);
    procs.push(etcd);
    await waitFor('etcd health', etcd, async () => {
      const res = await fetch(`${etcdUrl}/health`);
      return res.ok && ((await res.json()) as { health?: string }).health === 'true';
    }, 30_000, dir, 'etcd');

    const server = `https://127.0.0.1:${apiPort}`;
    const apiserverArgs = [
      '--advertise-address=127.0.0.1',
      '--bind-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${certs.servingCert}`,
      `--tls-private-key-file=${certs.servingKey}`,
      `--client-ca-file=${certs.caCert}`,
      '--authorization-mode=RBAC',
      '--disable-admission-plugins=ServiceAccount',
      '--allow-privileged=true',
      // Off the private ranges: 198.18.0.0/15 is reserved for testing.
      '--service-cluster-ip-range=198.19.0.0/16',
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${certs.saPub}`,
      `--service-account-signing-key-file=${certs.saKey}`,
      '--v=1',
    ];
    let apiserver = startProcess('kube-apiserver', tools.kubeApiserver, apiserverArgs, dir);
    procs.push(apiserver);
    await waitFor('kube-apiserver /readyz', apiserver, () => readyz(apiPort, certs), 90_000, dir, 'kube-apiserver');
    const restartApiServer = async () => {
      await stopProcess(apiserver);
      procs.splice(procs.indexOf(apiserver), 1);
      apiserver = startProcess('kube-apiserver', tools.kubeApiserver, apiserverArgs, dir);
      procs.push(apiserver);
      await waitFor('kube-apiserver /readyz after restart', apiserver, () => readyz(apiPort, certs), 90_000, dir, 'kube-apiserver');
    };

    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(server, certs), { mode: 0o600 });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KUBECONFIG: kubeconfig,
      KUBECACHEDIR: join(dir, 'kube-cache'),
      HELM_CACHE_HOME: join(dir, 'helm', 'cache'),
      HELM_CONFIG_HOME: join(dir, 'helm', 'config'),
      HELM_DATA_HOME: join(dir, 'helm', 'data'),
    };
    const cluster: Cluster = {
      kubeconfig,
      server,
      dir,
      certs,
      tools,
      env,
      kubectl: (args, o = {}) => exec(tools.kubectl, args, { env, ...o }),
      helm: (args, o = {}) => exec(tools.helm, args, { env, ...o }),
      restartApiServer,
      stop,
    };

    await checkKubectlSkew(cluster);
    if (opts.gatewayApi !== false) await applyCrds(cluster, tools.gatewayApiCrds);
    if (opts.tollgateCrds !== false) await applyCrds(cluster, join(REPO_ROOT, 'crds'));
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** kubectl supports servers one minor version away; fail clearly on a wider skew. */
export async function checkKubectlSkew(cluster: Pick<Cluster, 'tools' | 'env'>): Promise<void> {
  const out = await run(cluster.tools.kubectl, ['version', '-o', 'json'], { env: cluster.env });
  const v = JSON.parse(out) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
  if (v.serverVersion.gitVersion !== VERSIONS.kubernetes) {
    throw new Error(`kube-apiserver reports ${v.serverVersion.gitVersion}, expected ${VERSIONS.kubernetes} (built without the version ldflags?)`);
  }
  const skew = Math.abs(minorOf(v.clientVersion.gitVersion) - minorOf(v.serverVersion.gitVersion));
  if (skew > 1) {
    throw new Error(`kubectl ${v.clientVersion.gitVersion} is ${skew} minor versions from the server ${v.serverVersion.gitVersion}; kubectl supports one`);
  }
}

export async function applyCrds(cluster: Pick<Cluster, 'tools' | 'env'>, path: string): Promise<void> {
  await run(cluster.tools.kubectl, ['apply', '--server-side', '-f', path], { env: cluster.env });
  // kubectl wait fails at once, instead of waiting, when it reads a CRD whose status the API
  // server has not filled yet (".status.conditions accessor error: <nil>", a known kubectl race).
  // That read is the only transient failure here, so it alone is retried; each retry is a new watch.
  for (let attempt = 1; ; attempt++) {
    try {
      await run(cluster.tools.kubectl, ['wait', '--for=condition=Established', '--timeout=60s', '-f', path], { env: cluster.env });
      return;
    } catch (err) {
      if (attempt >= 5 || !/status\.conditions accessor error/.test((err as Error).message)) throw err;
    }
  }
}
