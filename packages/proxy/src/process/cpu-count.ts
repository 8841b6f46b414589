// The CPUs this process may use: the default number of worker threads. In a container the
// machine's CPU count says nothing of what the container gets; its CFS quota does (Kubernetes
// turns `resources.limits.cpu` into one). os.availableParallelism() already reflects the
// cpuset (the CPUs the process may run on); the quota is the time it may run on them:
// ceil(quota / period) CPUs, at least 1, at most availableParallelism().
//
// The quota is read in the cgroup the process is in (/proc/self/cgroup), and in each of its
// ancestors up to the mount point: a limit set on a parent (a pod, a systemd slice) binds its
// children too, so the tightest one wins. Inside a container the path /proc/self/cgroup names
// is often the host's and does not exist under the container's mount, whose root is then the
// container's own cgroup: directories that do not exist are skipped, which falls back to the
// mount root. A file that exists but does not read as a quota is ignored, and said so.
//
// cgroup v1 (`N:cpu,cpuacct:/path`, mounted at /sys/fs/cgroup/cpu,cpuacct or /sys/fs/cgroup/cpu):
// cpu.cfs_quota_us (-1: no limit) and cpu.cfs_period_us. cgroup v2 (`0::/path`, mounted at
// /sys/fs/cgroup): cpu.max, "<quota|max> <period>". A hybrid host lists both; its cpu controller
// is the v1 one, so a v1 line naming it is read first.
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, posix } from 'node:path';

export interface CpuCount {
  /** CPUs the process may use: the default worker count. */
  readonly cpus: number;
  /** Where the figure came from, for the startup log line. */
  readonly source: string;
  /** A CPU quota was found (else the figure is the CPUs the process may run on). */
  readonly quota: boolean;
  /** Files that exist but do not read as a quota, each with why; they were left out. */
  readonly ignored: readonly string[];
}

/** Where to read; tests point them at fixture trees. */
export interface CpuCountSources {
  /** Default /proc/self/cgroup. */
  readonly procSelfCgroup?: string;
  /** Where the cgroup hierarchies are mounted; default /sys/fs/cgroup. */
  readonly cgroupRoot?: string;
  /** default os.availableParallelism(). */
  readonly available?: number;
}

interface Quota {
  readonly quota: number;
  readonly period: number;
  readonly version: 1 | 2;
  /** The cgroup directory whose files gave it. */
  readonly dir: string;
}

/** A limit file's reading: a quota, no limit at this level, or content that is not a quota. */
type Reading = { readonly kind: 'quota'; readonly quota: number; readonly period: number } | { readonly kind: 'none' } | { readonly kind: 'garbage'; readonly why: string };

export function cpuCount(sources: CpuCountSources = {}): CpuCount {
  const available = Math.max(1, sources.available ?? availableParallelism());
  const root = sources.cgroupRoot ?? '/sys/fs/cgroup';
  const ignored: string[] = [];
  const quota = readQuota(sources.procSelfCgroup ?? '/proc/self/cgroup', root, ignored);
  if (!quota) return { cpus: available, source: `no quota: ${available} CPU${available === 1 ? '' : 's'} available`, quota: false, ignored };
  const wanted = Math.max(1, Math.ceil(quota.quota / quota.period));
  const cpus = Math.min(wanted, available);
  const from = `cgroup v${quota.version} quota ${quota.quota}/${quota.period} (${quota.dir})`;
  return { cpus, source: cpus < wanted ? `${from}: ${wanted} CPUs, capped at the ${available} available` : from, quota: true, ignored };
}

/** The tightest quota on the process's cgroup and its ancestors, or null when none is set. */
function readQuota(procSelfCgroup: string, root: string, ignored: string[]): Quota | null {
  let lines: string[];
  try {
    lines = readFileSync(procSelfCgroup, 'utf8').split('\n');
  } catch (err) {
    ignored.push(`${procSelfCgroup}: ${(err as Error).message}`);
    return null;
  }
  // `hierarchy-id:controllers:path`; the path may itself hold colons.
  const entries = lines.flatMap((line) => {
    const m = /^(\d+):([^:]*):(\/.*)$/.exec(line.trim());
    return m ? [{ id: m[1]!, controllers: m[2]!.split(','), path: m[3]! }] : [];
  });
  const v1 = entries.find((e) => e.controllers.includes('cpu'));
  const v1Mount = v1 && [v1.controllers.join(','), 'cpu,cpuacct', 'cpuacct,cpu', 'cpu'].map((d) => join(root, d)).find((d) => existsSync(d));
  if (v1 && v1Mount) return tightest(v1Mount, v1.path, 1, ignored);
  const v2 = entries.find((e) => e.id === '0' && e.controllers.join('') === '');
  return v2 ? tightest(root, v2.path, 2, ignored) : null;
}

/** Walks from the cgroup's directory up to the mount, keeping the smallest quota/period. */
function tightest(mount: string, path: string, version: 1 | 2, ignored: string[]): Quota | null {
  let best: Quota | null = null;
  for (let p = posix.normalize(path); ; p = posix.dirname(p)) {
    const dir = p === '/' ? mount : join(mount, p);
    if (existsSync(dir)) {
      const r = version === 1 ? readV1(dir) : readV2(dir);
      if (r.kind === 'garbage') ignored.push(r.why);
      else if (r.kind === 'quota' && (!best || r.quota / r.period < best.quota / best.period)) best = { quota: r.quota, period: r.period, version, dir };
    }
    if (p === '/') return best;
  }
}

function readV2(dir: string): Reading {
  const file = join(dir, 'cpu.max');
  const text = readOptional(file);
  if (text === null) return { kind: 'none' };
  if (text instanceof Error) return { kind: 'garbage', why: `${file}: ${text.message}` };
  const m = /^(max|\d+) (\d+)$/.exec(text.trim());
  if (!m) return { kind: 'garbage', why: `${file}: ${JSON.stringify(text.trim())} is not "<quota|max> <period>"` };
  if (m[1] === 'max') return { kind: 'none' };
  return positive(file, Number(m[1]), Number(m[2]));
}

function readV1(dir: string): Reading {
  const quotaFile = join(dir, 'cpu.cfs_quota_us');
  const quotaRead = readOptional(quotaFile);
  if (quotaRead instanceof Error) return { kind: 'garbage', why: `${quotaFile}: ${quotaRead.message}` };
  const quotaText = quotaRead?.trim();
  if (quotaText === undefined || quotaText === '-1') return { kind: 'none' };
  if (!/^\d+$/.test(quotaText)) return { kind: 'garbage', why: `${quotaFile}: ${JSON.stringify(quotaText)} is not a number of microseconds or -1` };
  const periodFile = join(dir, 'cpu.cfs_period_us');
  const periodRead = readOptional(periodFile);
  if (periodRead instanceof Error) return { kind: 'garbage', why: `${periodFile}: ${periodRead.message}` };
  const periodText = periodRead?.trim();
  if (periodText === undefined) return { kind: 'garbage', why: `${quotaFile} sets a quota but ${periodFile} is missing` };
  if (!/^\d+$/.test(periodText)) return { kind: 'garbage', why: `${periodFile}: ${JSON.stringify(periodText)} is not a number of microseconds` };
  return positive(quotaFile, Number(quotaText), Number(periodText));
}

function positive(file: string, quota: number, period: number): Reading {
  if (quota > 0 && period > 0) return { kind: 'quota', quota, period };
  return { kind: 'garbage', why: `${file}: quota ${quota} and period ${period} must both be above 0` };
}

/**
 * The file's text; null when it does not exist (a level with no such file sets no limit); the
 * error when it cannot be read (unreadable is reported, never fatal: the count falls back).
 */
function readOptional(file: string): string | null | Error {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : (err as Error);
  }
}
