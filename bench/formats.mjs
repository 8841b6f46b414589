#!/usr/bin/env node
// What translating a streamed response costs: one Tollgate in front of mock-llm, which serves
// OpenAI's Chat Completions and Anthropic's Messages API alike. Three metered routes (never
// refusing token limits), told apart by hostname, all streaming the same 16-token reply:
//   messages   - an Anthropic client to the Anthropic backend, passed through (usage read from
//                Anthropic's events): the base;
//   translated - an OpenAI client (stream, include_usage) to the same backend with
//                provider.type Anthropic: request, events and usage translated;
//   chat       - an OpenAI client to the OpenAI API, passed through (for reference).
// The variants take turns within each round, the proxy pinned to one CPU; the table gives
// medians and each variant's CPU per request against `messages`, measured in the same rounds.
// Printed, not asserted.
//
//   pnpm build && node bench/formats.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus as osCpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { intOption, median } from './lib/stats.mjs';
import { MOCK_LLM_BIN, TOLLGATE_BIN } from './lib/cases.mjs';
import { commands, freePort, isBindListening, killAllNow, startProcess, stopAll, stopAllOnSignals } from './lib/procs.mjs';
import { probe } from './lib/requests.mjs';
import { procCpuUs } from './peers/proc-stats.mjs';
import { ensureWrk, wrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/formats.mjs [options]

Options:
  --rounds <n>       rounds; each runs every variant once, in turn   [default 5]
  --duration <s>     measured seconds per variant and round           [default 10]
  --warmup <s>       unmeasured seconds before each measurement        [default 3]
  --connections <n>  wrk keep-alive connections                        [default 32]
  --check            start everything and check each variant's answer once; no load
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['messages', 'translated', 'chat'];
/** The issue's bound: translation at most +20% CPU per request against passthrough. */
const TARGETS = { translated: 1.2 };
const PROMPT = 'measure the gateway in front of the model';

function options() {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      check: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const int = (name, min) => intOption(values, name, min);
  return { rounds: int('rounds', 1), durationS: int('duration', 1), warmupS: int('warmup', 0), connections: int('connections', 1), check: values.check === true };
}

const streamed = (status, body) => status === 200 && body.length > 0;

/** The request each variant sends; its check makes sure the stream is whole (ended, with usage). */
const REQUESTS = {
  messages: {
    id: 'messages',
    method: 'POST',
    path: '/v1/messages',
    headers: { 'content-type': 'application/json', host: 'messages.formats.bench' },
    body: JSON.stringify({ model: 'mock-claude', max_tokens: 16, stream: true, messages: [{ role: 'user', content: PROMPT }] }),
    check: (status, body) => streamed(status, body) && body.includes('event: message_stop') && body.includes('"output_tokens":16'),
  },
  translated: {
    id: 'translated',
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', host: 'translated.formats.bench' },
    body: JSON.stringify({ model: 'mock-claude', max_tokens: 16, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: PROMPT }] }),
    check: (status, body) => streamed(status, body) && body.includes('"chat.completion.chunk"') && body.includes('"total_tokens"') && body.trimEnd().endsWith('data: [DONE]'),
  },
  chat: {
    id: 'chat',
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', host: 'chat.formats.bench' },
    body: JSON.stringify({ model: 'mock-gpt', max_tokens: 16, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: PROMPT }] }),
    check: (status, body) => streamed(status, body) && body.includes('"total_tokens"') && body.trimEnd().endsWith('data: [DONE]'),
  },
};

function writeConfig(dir, mockLlmHost, port, adminPort) {
  const policies = { traffic: { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } } };
  const anthropic = { host: mockLlmHost, provider: { type: 'Anthropic' } };
  const routes = VARIANTS.map((v) => ({ name: v, hostnames: [`${v}.formats.bench`], policies, backends: [v === 'chat' ? { host: mockLlmHost } : anthropic] }));
  const config = {
    config: { adminAddr: `127.0.0.1:${adminPort}`, logLevel: 'info', drainTimeout: '1s' },
    binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'bench', protocol: 'HTTP', routes }] }],
  };
  const file = join(dir, 'tollgate.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

const n = (v, d = 1) => (v === null ? '-' : v.toFixed(d));

async function main() {
  const opts = options();
  if (!opts.check) ensureWrk();
  const pinned = commands.taskset && osCpus().length >= 2;
  const cpus = pinned ? { proxy: '0', load: '1' } : { proxy: null, load: null };
  console.log(`streamed response: OpenAI-to-Anthropic translation against passthrough, ${new Date().toISOString()}`);
  console.log(`machine: ${osCpus().length} CPUs; node ${process.version}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`load: wrk -t1 -c${opts.connections}, ${opts.warmupS} s warm-up + ${opts.durationS} s per variant and round; ${opts.rounds} round(s); ${pinned ? 'proxy on CPU 0, mock-llm and wrk on CPU 1' : 'no pinning'}`);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-formats-bench-'));
  try {
    const ml = startProcess('mock-llm', process.execPath, [MOCK_LLM_BIN, '--port', '0'], { cpu: cpus.load });
    const mline = await ml.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
    const mockLlmHost = new URL(mline.slice('mock-llm listening on '.length).trim()).host;
    const port = await freePort();
    const file = writeConfig(dir, mockLlmHost, port, await freePort());
    const side = ['--metrics-addr', `127.0.0.1:${await freePort()}`, '--readiness-addr', `127.0.0.1:${await freePort()}`];
    const proxy = startProcess('tollgate', process.execPath, [TOLLGATE_BIN, '--file', file, ...side], { cpu: cpus.proxy });
    await proxy.waitForLine(isBindListening, 120_000);
    const url = `http://127.0.0.1:${port}`;
    for (const v of VARIANTS) {
      const bad = await probe(url, REQUESTS[v]);
      if (bad) throw new Error(`variant ${v} answers wrongly: ${bad}`);
    }
    if (opts.check) {
      console.log(`every variant answers: ${VARIANTS.join(', ')}`);
      return;
    }
    const runs = Object.fromEntries(VARIANTS.map((v) => [v, []]));
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 ? VARIANTS : [...VARIANTS].reverse();
      for (const v of order) {
        const common = { baseUrl: url, request: REQUESTS[v], connections: opts.connections, cpu: cpus.load, workDir: dir, delayMs: 0 };
        if (opts.warmupS) await wrk({ ...common, durationS: opts.warmupS });
        let cpu0 = 0;
        const r = await wrk({ ...common, durationS: opts.durationS, onStart: () => (cpu0 = procCpuUs(proxy.pid)) });
        const cpuUsPerReq = (procCpuUs(proxy.pid) - cpu0) / r.requests;
        runs[v].push({ ...r, cpuUsPerReq });
        console.log(`[round ${round}/${opts.rounds}] ${v}: ${Math.round(r.rps)} req/s, p99 ${n(r.p99Ms, 2)} ms, ${n(cpuUsPerReq)} µs CPU/req${r.errors || r.non2xx ? `, ERRORS ${r.errors} socket, ${r.non2xx} non-2xx` : ''}`);
      }
    }
    const base = median(runs.messages.map((r) => r.cpuUsPerReq));
    console.log('');
    console.log('| variant | req/s | p99 ms | CPU µs/req | vs messages | target |');
    console.log('|---|---:|---:|---:|---:|---|');
    for (const v of VARIANTS) {
      const cpu = median(runs[v].map((r) => r.cpuUsPerReq));
      const ratio = base ? cpu / base : null;
      const target = TARGETS[v] ? `<= ${TARGETS[v].toFixed(2)}x (+20%) ${ratio !== null && ratio <= TARGETS[v] ? 'met' : 'NOT met'}` : '';
      console.log(`| ${v} | ${Math.round(median(runs[v].map((r) => r.rps)))} | ${n(median(runs[v].map((r) => r.p99Ms)), 2)} | ${n(cpu)} | ${ratio === null ? '-' : `${ratio.toFixed(2)}x`} | ${target} |`);
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

stopAllOnSignals();
process.on('exit', () => killAllNow());
main().catch(async (err) => {
  console.error(`formats bench failed: ${err.stack ?? err.message}`);
  await stopAll();
  process.exit(1);
});
