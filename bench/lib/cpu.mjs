// CPU use of the bench's processes while a case is measured, from /proc/<pid>/stat
// (utime + stime, all threads; children such as nginx workers are added in).
// 100% = one core busy for the whole window.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setInterval, clearInterval } from 'node:timers';
import { childPids } from './procs.mjs';

let clkTck = 100;
try {
  clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // Linux default
}

function ticks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return null;
  }
}

/** Total ticks of pid and its direct children, or null when pid is gone. */
function treeTicks(pid) {
  const own = ticks(pid);
  if (own === null) return null;
  let sum = own;
  for (const kid of childPids(pid)) sum += ticks(kid) ?? 0;
  return sum;
}

/** Busy and total ticks of the machine ('cpu') and of each CPU ('cpu0', ...), from /proc/stat. */
function machineTicks() {
  try {
    const out = {};
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      if (!line.startsWith('cpu')) continue;
      const [name, ...rest] = line.trim().split(/\s+/);
      const v = rest.map(Number);
      const idle = v[3] + (v[4] ?? 0);
      out[name] = { idle, total: v.reduce((a, b) => a + b, 0) };
    }
    return out.cpu ? out : null;
  } catch {
    return null;
  }
}

/**
 * Samples the given roles ({ role: pid | () => pid }) every `everyMs` until stop(); returns
 * { role: percent } over the span each pid was seen, plus `machine`: everything the machine
 * ran meanwhile, in the same unit (100% per busy core), so machine - sum(roles) is load from
 * outside the bench.
 */
export function sampleCpu(roles, everyMs = 250) {
  const first = {};
  const last = {};
  const m0 = machineTicks();
  const take = () => {
    const now = performance.now();
    for (const [role, pidOrFn] of Object.entries(roles)) {
      const pid = typeof pidOrFn === 'function' ? pidOrFn() : pidOrFn;
      if (!pid) continue;
      const t = treeTicks(pid);
      if (t === null) continue;
      if (!first[role] || first[role].pid !== pid) first[role] = { pid, t, now };
      last[role] = { pid, t, now };
    }
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      take();
      clearInterval(timer);
      const out = {};
      for (const role of Object.keys(roles)) {
        const a = first[role];
        const b = last[role];
        out[role] = a && b && b.now - a.now > 100 ? (((b.t - a.t) / clkTck) * 1000 * 100) / (b.now - a.now) : null;
      }
      const m1 = machineTicks();
      const busy = (name) => {
        const a = m0?.[name];
        const b = m1?.[name];
        if (!a || !b || b.total <= a.total) return null;
        const span = b.total - a.total;
        return (100 * (span - (b.idle - a.idle))) / span;
      };
      const all = busy('cpu');
      if (all !== null) out.machine = all * cpus().length;
      // Busy % of each CPU (100 = that CPU never idle): shows which core was the limit.
      out.perCpu = cpus().map((_, i) => busy(`cpu${i}`));
      return out;
    },
  };
}
