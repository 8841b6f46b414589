// The cluster of `pnpm cluster up` for a suite, the way a user gets it: `beforeAll` runs the
// command, reads the line it prints for pasting (KUBECONFIG and PATH) and hands the suite
// kubectl and helm from that line; `afterAll` runs `pnpm cluster down`. Docs/kubernetes.md's
// Getting started starts from the same command.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { exec, type ExecOptions, type ExecResult } from './exec.js';
import type { Node } from './node/node.js';
import { REPO_ROOT } from './tools.js';

/** What a suite uses of a node, whoever started it. */
export type ClusterHandle = Pick<Node, 'kubeconfig' | 'dir' | 'tools' | 'env' | 'kubectl' | 'helm'>;

export interface ClusterRef {
  readonly current: ClusterHandle;
  /** What `pnpm cluster up` printed. */
  readonly upOutput: string;
}

const CLUSTER = ['--import', join(REPO_ROOT, 'scripts/lib/ts-hooks.mjs'), join(REPO_ROOT, 'scripts/cluster.mjs')];

/** `pnpm cluster <command>`, run as the package script runs it. */
export function clusterCommand(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
  return exec(process.execPath, [...CLUSTER, command], { cwd: REPO_ROOT, timeoutMs: 30 * 60_000, ...opts });
}

/** The line `pnpm cluster up` and `status` print to paste: `export KUBECONFIG=<file> PATH=<dir>:$PATH`. */
export function pasteLine(output: string): { kubeconfig: string; bin: string } {
  const m = /^ {2}export KUBECONFIG=(\S+) PATH=(\S+):\$PATH$/m.exec(output);
  if (!m) throw new Error(`no line to paste in:\n${output}`);
  return { kubeconfig: m[1]!, bin: m[2]! };
}

export function useClusterCommand(tools: Node['tools']): ClusterRef {
  let handle: ClusterHandle | undefined;
  let upOutput = '';
  let dir: string | undefined;
  beforeAll(async () => {
    const up = await clusterCommand('up');
    upOutput = up.stdout;
    if (up.code !== 0) throw new Error(`pnpm cluster up exited ${up.code}:\n${up.stdout}\n${up.stderr}`);
    console.info(up.stdout.split('\n').filter((l) => /cluster up in|node ready in/.test(l)).join('\n'));
    const { kubeconfig, bin } = pasteLine(up.stdout);
    dir = mkdtempSync(join(tmpdir(), 'tollgate-cluster-user-'));
    // The user's shell after pasting the line: KUBECONFIG, and kubectl and helm first on PATH.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KUBECONFIG: kubeconfig,
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      KUBECACHEDIR: join(dir, 'kube-cache'),
      HELM_CACHE_HOME: join(dir, 'helm', 'cache'),
      HELM_CONFIG_HOME: join(dir, 'helm', 'config'),
      HELM_DATA_HOME: join(dir, 'helm', 'data'),
    };
    const kubectl = join(bin, 'kubectl');
    const helm = join(bin, 'helm');
    handle = {
      kubeconfig,
      dir,
      tools: { ...tools, kubectl, helm },
      env,
      kubectl: (args, o = {}) => exec(kubectl, args, { env, ...o }),
      helm: (args, o = {}) => exec(helm, args, { env, ...o }),
    };
  }, 40 * 60_000);
  afterAll(async () => {
    const down = await clusterCommand('down');
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (down.code !== 0) throw new Error(`pnpm cluster down exited ${down.code}:\n${down.stdout}\n${down.stderr}`);
    console.info(down.stdout.trim());
  }, 300_000);
  return {
    get current(): ClusterHandle {
      if (!handle) throw new Error('the cluster is not up (useClusterCommand must be called inside the describe block of the suite)');
      return handle;
    },
    get upOutput() {
      return upOutput;
    },
  };
}
