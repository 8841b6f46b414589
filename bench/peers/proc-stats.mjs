// A process's own CPU time and memory, from /proc: utime + stime of every thread (the
// process-wide figures in /proc/<pid>/stat), and VmRSS / VmHWM from /proc/<pid>/status.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clkTck = 100;
try {
  clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
} catch {
  // the Linux default
}

/** CPU time (user + system) the process has used so far, in µs (clock-tick resolution). */
export function procCpuUs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) / clkTck) * 1e6;
}

/** Resident set now and its high-water mark, in KiB. */
export function rssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
}
