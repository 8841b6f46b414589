// The default worker count from the container's CPU quota, read from fixture cgroup trees
// (v1, v2, hybrid, no limit, nested paths, a container's view, missing and garbage files), and
// what this machine's own cgroup gives (printed, not asserted: it depends on the machine).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpuCount, type CpuCountSources } from '../src/process/cpu-count.js';

let base: string;
let n = 0;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'tollgate-cpu-count-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** A fixture: /proc/self/cgroup's text and files under the cgroup mount root (path -> content). */
async function tree(procSelfCgroup: string, files: Record<string, string>, available = 8): Promise<CpuCountSources> {
  const dir = join(base, String(n++));
  const cgroupRoot = join(dir, 'sys/fs/cgroup');
  await mkdir(cgroupRoot, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(cgroupRoot, path)), { recursive: true });
    await writeFile(join(cgroupRoot, path), content);
  }
  await writeFile(join(dir, 'cgroup'), procSelfCgroup);
  return { procSelfCgroup: join(dir, 'cgroup'), cgroupRoot, available };
}

const V1 = '12:memory:/kubepods/pod1/c1\n4:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n';

describe('cgroup v2', () => {
  it('reads cpu.max in the cgroup the process is in: ceil(quota/period)', async () => {
    const s = await tree('0::/kubepods/pod1/c1\n', { 'cgroup.controllers': 'cpu memory', 'kubepods/pod1/c1/cpu.max': '150000 100000\n' });
    expect(cpuCount(s)).toEqual({ cpus: 2, source: `cgroup v2 quota 150000/100000 (${s.cgroupRoot}/kubepods/pod1/c1)`, quota: true, ignored: [] });
  });

  it('"max" is no limit: every CPU available', async () => {
    const s = await tree('0::/a\n', { 'a/cpu.max': 'max 100000\n' }, 3);
    expect(cpuCount(s)).toEqual({ cpus: 3, source: 'no quota: 3 CPUs available', quota: false, ignored: [] });
  });

  it('a limit on an ancestor binds the cgroup under it; the tightest wins', async () => {
    const s = await tree('0::/slice/svc\n', { 'slice/cpu.max': '200000 100000', 'slice/svc/cpu.max': 'max 100000' });
    expect(cpuCount(s).cpus).toBe(2);
    const t = await tree('0::/slice/svc\n', { 'slice/cpu.max': '400000 100000', 'slice/svc/cpu.max': '100000 100000' });
    expect(cpuCount(t).source).toBe(`cgroup v2 quota 100000/100000 (${t.cgroupRoot}/slice/svc)`);
  });

  it('in a container, a path that does not exist under the mount falls back to the mount root', async () => {
    const s = await tree('0::/kubepods/burstable/pod9/abc\n', { 'cpu.max': '250000 100000' });
    expect(cpuCount(s)).toEqual({ cpus: 3, source: `cgroup v2 quota 250000/100000 (${s.cgroupRoot})`, quota: true, ignored: [] });
  });

  it('is at least 1 and at most the CPUs available', async () => {
    expect(cpuCount(await tree('0::/\n', { 'cpu.max': '10000 100000' })).cpus).toBe(1);
    const s = await tree('0::/\n', { 'cpu.max': '1600000 100000' }, 4);
    expect(cpuCount(s)).toEqual({ cpus: 4, source: `cgroup v2 quota 1600000/100000 (${s.cgroupRoot}): 16 CPUs, capped at the 4 available`, quota: true, ignored: [] });
  });
});

describe('cgroup v1', () => {
  it('reads cpu.cfs_quota_us and cpu.cfs_period_us under cpu,cpuacct', async () => {
    const s = await tree(V1, { 'cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_quota_us': '200000\n', 'cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_period_us': '100000\n' });
    expect(cpuCount(s)).toEqual({ cpus: 2, source: `cgroup v1 quota 200000/100000 (${s.cgroupRoot}/cpu,cpuacct/kubepods/pod1/c1)`, quota: true, ignored: [] });
  });

  it('reads a cpu controller mounted on its own (/sys/fs/cgroup/cpu), the v1 line winning over the v2 one of a hybrid host', async () => {
    const s = await tree('3:cpuset:/\n2:cpuacct:/\n1:cpu:/job\n0::/job\n', { 'cpu/job/cpu.cfs_quota_us': '50000', 'cpu/job/cpu.cfs_period_us': '100000', 'unified/job/cgroup.procs': '' });
    expect(cpuCount(s)).toEqual({ cpus: 1, source: `cgroup v1 quota 50000/100000 (${s.cgroupRoot}/cpu/job)`, quota: true, ignored: [] });
  });

  it('-1 is no limit', async () => {
    const s = await tree(V1, { 'cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_quota_us': '-1', 'cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_period_us': '100000' }, 2);
    expect(cpuCount(s)).toEqual({ cpus: 2, source: 'no quota: 2 CPUs available', quota: false, ignored: [] });
  });

  it('nested: the pod limit applies when the container sets none; a container path missing from the mount falls back to its root', async () => {
    const s = await tree(V1, { 'cpu,cpuacct/kubepods/pod1/cpu.cfs_quota_us': '300000', 'cpu,cpuacct/kubepods/pod1/cpu.cfs_period_us': '100000', 'cpu,cpuacct/kubepods/pod1/c1/cpu.cfs_quota_us': '-1' });
    expect(cpuCount(s).cpus).toBe(3);
    const container = await tree(V1, { 'cpu,cpuacct/cpu.cfs_quota_us': '100000', 'cpu,cpuacct/cpu.cfs_period_us': '100000' });
    expect(cpuCount(container)).toEqual({ cpus: 1, source: `cgroup v1 quota 100000/100000 (${container.cgroupRoot}/cpu,cpuacct)`, quota: true, ignored: [] });
  });
});

describe('what cannot be read', () => {
  it('missing files and a missing /proc/self/cgroup fall back to the CPUs available', async () => {
    expect(cpuCount(await tree(V1, { 'cpu,cpuacct/tasks': '' }, 2))).toEqual({ cpus: 2, source: 'no quota: 2 CPUs available', quota: false, ignored: [] });
    expect(cpuCount(await tree('0::/a\n', {}, 2))).toEqual({ cpus: 2, source: 'no quota: 2 CPUs available', quota: false, ignored: [] });
    const gone = cpuCount({ procSelfCgroup: join(base, 'absent'), cgroupRoot: base, available: 1 });
    expect(gone).toMatchObject({ cpus: 1, source: 'no quota: 1 CPU available' });
    expect(gone.ignored).toEqual([expect.stringMatching(/absent: ENOENT/)]);
  });

  it('garbage is ignored with the reason, and the count falls back', async () => {
    const v2 = await tree('0::/\n', { 'cpu.max': 'lots\n' }, 2);
    expect(cpuCount(v2)).toEqual({ cpus: 2, source: 'no quota: 2 CPUs available', quota: false, ignored: [`${v2.cgroupRoot}/cpu.max: "lots" is not "<quota|max> <period>"`] });
    const zero = await tree('0::/\n', { 'cpu.max': '100000 0' }, 2);
    expect(cpuCount(zero).ignored).toEqual([`${zero.cgroupRoot}/cpu.max: quota 100000 and period 0 must both be above 0`]);
    const v1 = await tree(V1, { 'cpu,cpuacct/cpu.cfs_quota_us': '2e5', 'cpu,cpuacct/cpu.cfs_period_us': '100000' }, 2);
    expect(cpuCount(v1).ignored).toEqual([`${v1.cgroupRoot}/cpu,cpuacct/cpu.cfs_quota_us: "2e5" is not a number of microseconds or -1`]);
    const noPeriod = await tree(V1, { 'cpu,cpuacct/cpu.cfs_quota_us': '200000' }, 2);
    expect(cpuCount(noPeriod)).toMatchObject({ cpus: 2, ignored: [expect.stringMatching(/cpu\.cfs_quota_us sets a quota but .*cpu\.cfs_period_us is missing$/)] });
  });

  it('a garbage level is left out while a sound one still counts', async () => {
    const s = await tree('0::/a\n', { 'cpu.max': '200000 100000', 'a/cpu.max': '???' });
    expect(cpuCount(s)).toMatchObject({ cpus: 2, ignored: [expect.stringContaining('a/cpu.max')] });
  });
});

describe('this machine', () => {
  it('reads its own cgroup (printed, not asserted)', () => {
    const here = cpuCount();
    console.log(`cpu-count on this machine: ${here.cpus} (${here.source})${here.ignored.length ? `; ignored: ${here.ignored.join('; ')}` : ''}`);
    expect(here.cpus).toBeGreaterThanOrEqual(1);
  });
});
