// The load generator: wrk (one thread) when installed, else autocannon, each run as its own
// process for a fixed duration. Both report requests/s, p50 and p99 latency (ms) and errors.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { commands, startProcess } from './procs.mjs';

const require = createRequire(import.meta.url);

export function pickTool(wanted) {
  if (wanted === 'wrk' && !commands.wrk) throw new Error('--tool wrk: wrk is not installed (apt-get install -y wrk)');
  if (wanted) return wanted;
  return commands.wrk ? 'wrk' : 'autocannon';
}

/** A Lua long string that cannot be closed by the text inside it. */
function luaString(text) {
  let eq = '=';
  while (text.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${text}]${eq}]`;
}

const MARK = 'BENCH_RESULT ';

function wrkScript(request) {
  const lines = [`wrk.method = ${luaString(request.method)}`];
  if (request.body !== null) lines.push(`wrk.body = ${luaString(request.body)}`);
  for (const [k, v] of Object.entries(request.headers)) {
    // wrk keeps a Host header the script sets; name it as wrk does.
    lines.push(`wrk.headers[ ${luaString(k === 'host' ? 'Host' : k)} ] = ${luaString(v)}`);
  }
  lines.push(`
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('${MARK}{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.timeout, e.status))
end
`);
  return lines.join('\n');
}

/**
 * Runs one load: `connections` keep-alive connections for `durationS` seconds against
 * baseUrl + request.path. `onStart(pid)` is called with the generator's pid (CPU sampling).
 */
export async function runLoad({ tool, baseUrl, request, connections, durationS, cpu, workDir, onStart }) {
  const url = new URL(request.path, baseUrl).href;
  let proc;
  if (tool === 'wrk') {
    const script = join(workDir, `wrk-${request.method.toLowerCase()}-${Math.random().toString(36).slice(2, 8)}.lua`);
    writeFileSync(script, wrkScript(request));
    proc = startProcess('wrk', 'wrk', ['-t1', `-c${connections}`, `-d${durationS}s`, '--timeout', '5s', '-s', script, url], { cpu });
  } else {
    const bin = join(dirname(require.resolve('autocannon/package.json')), 'autocannon.js');
    const args = [bin, '-c', String(connections), '-d', String(durationS), '-t', '5', '-j', '-m', request.method];
    for (const [k, v] of Object.entries(request.headers)) args.push('-H', `${k}=${v}`);
    if (request.body !== null) args.push('-b', request.body);
    args.push(url);
    proc = startProcess('autocannon', process.execPath, args, { cpu });
  }
  proc.keepOutput = true;
  onStart?.(proc.pid);
  const code = await proc.exited;
  if (code !== 0) throw new Error(`${tool} exited (${code})\n${proc.tail}`);
  // wrk reports Lua errors on stderr and carries on with a default request: never accept that.
  if (tool === 'wrk' && proc.stderr.trim()) throw new Error(`wrk: ${proc.stderr.trim()}`);
  return tool === 'wrk' ? parseWrk(proc.stdout) : parseAutocannon(proc.stdout);
}

function parseWrk(stdout) {
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  if (!line) throw new Error(`wrk printed no result line:\n${stdout}`);
  const r = JSON.parse(line.slice(MARK.length));
  const e = r.errors;
  return {
    requests: r.requests,
    rps: r.requests / (r.durationUs / 1e6),
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    errors: e.connect + e.read + e.write + e.timeout,
    non2xx: e.status,
  };
}

function parseAutocannon(stdout) {
  const json = stdout.slice(stdout.indexOf('{'));
  const r = JSON.parse(json);
  return {
    requests: r.requests.total,
    rps: r.requests.total / r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}
