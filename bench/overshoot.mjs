#!/usr/bin/env node
// Token budget overshoot under concurrent streams: a route with a local token budget, 50
// streaming chat requests sent at once to mock-llm (slow enough that all are in flight
// together), with and without max_tokens. Prints how many were admitted, the tokens they
// used, and the overshoot (tokens used / budget); asserts nothing. In-process gateway and
// mock-llm on loopback; run `pnpm build` first.
//
//   node bench/overshoot.mjs
//   TOLLGATE_ROOT=/path/to/other/checkout node bench/overshoot.mjs   # the same run on another build
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

const ROOT = process.env.TOLLGATE_ROOT ?? new URL('..', import.meta.url).pathname;
// The proxy package's own entry point (a baseline build given with TOLLGATE_ROOT may predate
// startStandaloneProxy and export Gateway instead).
const proxy = await import(pathToFileURL(join(ROOT, 'packages/proxy/dist/index.js')).href);
const startProxy = proxy.startStandaloneProxy ?? ((options) => proxy.Gateway.start(options));
const { startMockLlm } = await import(pathToFileURL(join(ROOT, 'packages/mock-llm/dist/index.js')).href);

const STREAMS = 50;
const BUDGET = 1000;
const PROMPT_TOKENS = 100; // usage.prompt_tokens the backend reports
const COMPLETION_TOKENS = 200; // completion length, and max_tokens when the request sets it
const MS_PER_TOKEN = 5; // each stream lasts about a second: all 50 are in flight together
const PROMPT = 'x'.repeat(PROMPT_TOKENS * 4); // 400 bytes: what a prompt of 100 tokens weighs

async function freePort() {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  s.close();
  await once(s, 'close');
  return port;
}

/** One streaming request; resolves with its status and the usage of its final chunk. */
function stream(url, maxTokens) {
  const body = JSON.stringify({
    model: 'mock-gpt',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: PROMPT }],
    ...(maxTokens ? { max_tokens: maxTokens } : {}),
  });
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'x-mock-prompt-tokens': String(PROMPT_TOKENS) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        const m = [...text.matchAll(/"total_tokens":(\d+)/g)].at(-1);
        resolve({ status: res.statusCode, tokens: m ? Number(m[1]) : 0 });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function run(llm, withMaxTokens) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-overshoot-'));
  const file = join(dir, 'config.json');
  const port = await freePort();
  const route = {
    name: 'chat',
    policies: { traffic: { rateLimit: { local: [{ tokens: BUDGET, unit: 'Hours' }] } } },
    backends: [{ host: `127.0.0.1:${llm.port}` }],
  };
  writeFileSync(file, JSON.stringify({ binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'main', protocol: 'HTTP', routes: [route] }] }] }));
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  const gw = await startProxy({ file, adminAddr: '127.0.0.1:0', metricsAddr: '127.0.0.1:0', readinessAddr: '127.0.0.1:0', logDestination: quiet, watch: false });
  try {
    const url = `http://127.0.0.1:${port}/v1/chat/completions`;
    const results = await Promise.all(Array.from({ length: STREAMS }, () => stream(url, withMaxTokens ? COMPLETION_TOKENS : 0)));
    const admitted = results.filter((r) => r.status === 200);
    const used = admitted.reduce((n, r) => n + r.tokens, 0);
    return { admitted: admitted.length, refused: results.filter((r) => r.status === 429).length, used };
  } finally {
    await gw.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const llm = await startMockLlm({ port: 0, latencyMsPerToken: MS_PER_TOKEN, completionTokens: COMPLETION_TOKENS });
try {
  console.log(`Token budget overshoot: ${STREAMS} concurrent streams, budget ${BUDGET} tokens, each stream ${PROMPT_TOKENS} prompt + ${COMPLETION_TOKENS} completion tokens`);
  console.log(`build: ${ROOT}; node ${process.version}`);
  for (const withMaxTokens of [false, true]) {
    const r = await run(llm, withMaxTokens);
    const label = withMaxTokens ? `with max_tokens ${COMPLETION_TOKENS}` : 'without max_tokens';
    console.log(`  ${label.padEnd(22)} admitted ${String(r.admitted).padStart(2)}, refused ${String(r.refused).padStart(2)}, tokens used ${String(r.used).padStart(6)}  overshoot ${(r.used / BUDGET).toFixed(2)}x the budget`);
  }
} finally {
  await llm.close();
}
