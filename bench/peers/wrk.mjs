// wrk, one thread, as the peer bench's load generator: a closed loop of keep-alive
// connections, each sending its next request when the previous answer arrives, with
// p50/p99/p99.9 from wrk's own latency histogram. Installed with apt when missing (root).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commands, startProcess } from '../lib/procs.mjs';

/** Makes sure wrk is there: installs the Debian package when running as root, else says how. */
export function ensureWrk() {
  if (commands.wrk) return;
  if (process.getuid?.() !== 0) throw new Error('wrk is not installed; run: sudo apt-get install -y wrk');
  console.log('installing wrk (apt-get install -y wrk)');
  execFileSync('apt-get', ['install', '-y', '-q', 'wrk'], { stdio: 'inherit' });
  commands.wrk = true;
}

/**
 * Paced load (--rate): the pause of each connection between an answer and its next request,
 * in whole milliseconds, for about `rate` requests a second over `connections`; 0 without a rate.
 */
export function pacingDelayMs(connections, rate) {
  return rate === undefined ? 0 : Math.max(1, Math.round((1000 * connections) / rate));
}

/** The line a bench prints about its pacing; `who`: what each run gets the rate of ("proxy", "variant"). */
export function pacingLine(connections, delayMs, who) {
  return delayMs
    ? `paced: each connection waits ${delayMs} ms between an answer and its next request (at most ${Math.round((1000 * connections) / delayMs)} req/s; the req/s column is what each ${who} got)`
    : `closed loop: each connection sends its next request when the answer arrives (each ${who} at its own saturation)`;
}

/** A Lua long string that cannot be closed by the text inside it. */
function luaString(text) {
  let eq = '=';
  while (text.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${text}]${eq}]`;
}

const MARK = 'PEER_RESULT ';

/**
 * The Lua that gives each request its own value of one header, `prefix` + a number below
 * `count`, visiting every number once per `count` requests in a scattered order (a stride
 * coprime to count), from position `start`; one wrk thread makes this one sequence.
 */
function cycleScript({ header, prefix, count, start = 0 }) {
  let stride = count > 7919 ? 7919 : 1;
  while (gcd(stride, count) !== 1) stride += 2;
  return `
local cycle_n = 0
request = function()
  local k = ((${start} + cycle_n) * ${stride}) % ${count}
  cycle_n = cycle_n + 1
  wrk.headers[ ${luaString(header)} ] = ${luaString(prefix)} .. k
  return wrk.format()
end
`;
}

const gcd = (a, b) => (b === 0 ? a : gcd(b, a % b));

function script(request, delayMs, cycle) {
  const lines = [`wrk.method = ${luaString(request.method)}`];
  // wrk starts a request's clock when it writes the request, so the pause is not latency.
  if (delayMs) lines.push(`delay = function() return ${delayMs} end`);
  if (request.body !== null) lines.push(`wrk.body = ${luaString(request.body)}`);
  for (const [k, v] of Object.entries(request.headers)) lines.push(`wrk.headers[ ${luaString(k === 'host' ? 'Host' : k)} ] = ${luaString(v)}`);
  if (cycle) lines.push(cycleScript(cycle));
  lines.push(`
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('${MARK}{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"p999Us":%d,"maxUs":%d,' ..
    '"errors":%d,"status":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    latency.max, e.connect + e.read + e.write + e.timeout, e.status))
end
`);
  return lines.join('\n');
}

/**
 * One bounded wrk run against baseUrl + request.path. `onStart(pid)` runs once wrk is
 * started (the caller samples the proxy's CPU from there). `cycle` ({ header, prefix, count,
 * start }): each request carries its own value of that header (cycleScript).
 */
export async function wrk({ baseUrl, request, connections, durationS, cpu, workDir, onStart, delayMs = 0, cycle = null }) {
  const file = join(workDir, `wrk-${request.id}.lua`);
  writeFileSync(file, script(request, delayMs, cycle));
  const url = new URL(request.path, baseUrl).href;
  const proc = startProcess('wrk', 'wrk', ['-t1', `-c${connections}`, `-d${durationS}s`, '--timeout', '5s', '-s', file, url], { cpu });
  proc.keepOutput = true;
  onStart?.(proc.pid);
  const code = await proc.exited;
  if (code !== 0) throw new Error(`wrk exited (${code})\n${proc.tail}`);
  // wrk reports Lua errors on stderr and carries on with a default request: never accept that.
  if (proc.stderr.trim()) throw new Error(`wrk: ${proc.stderr.trim()}`);
  const line = proc.stdout.split('\n').find((l) => l.startsWith(MARK));
  if (!line) throw new Error(`wrk printed no result line:\n${proc.stdout}`);
  const r = JSON.parse(line.slice(MARK.length));
  return {
    requests: r.requests,
    seconds: r.durationUs / 1e6,
    rps: r.requests / (r.durationUs / 1e6),
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    p999Ms: r.p999Us / 1000,
    maxMs: r.maxUs / 1000,
    errors: r.errors,
    non2xx: r.status,
  };
}
