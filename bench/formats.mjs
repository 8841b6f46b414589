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
// medians and each variant's CPU per request against `messages` (the median of its per-round ratios).
// Printed, not asserted.
//
//   pnpm build && node bench/formats.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopAll } from './lib/procs.mjs';
import { writeTollgateConfig } from './lib/configs.mjs';
import { benchCpus, printCpuTable, printPreamble, RATE_OPTION_HELP, ROUND_OPTIONS_HELP, roundOptions, runBench, runRounds, startTollgateOnMock } from './lib/variants.mjs';
import { ensureWrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/formats.mjs [options]

Options:
${ROUND_OPTIONS_HELP}
${RATE_OPTION_HELP}
  --check            start everything and check each variant's answer once; no load
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['messages', 'translated', 'chat'];
/** The bound: translation at most +20% CPU per request against passthrough (1.20x). */
const TARGETS = { translated: 1.2 };
const PROMPT = 'measure the gateway in front of the model';

function options() {
  const { values, opts } = roundOptions(HELP, { check: { type: 'boolean' } });
  return { ...opts, check: values.check === true };
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

function routes(mockLlmHost) {
  const policies = { traffic: { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } } };
  const anthropic = { host: mockLlmHost, provider: { type: 'Anthropic' } };
  return VARIANTS.map((v) => ({ name: v, hostnames: [`${v}.formats.bench`], policies, backends: [v === 'chat' ? { host: mockLlmHost } : anthropic] }));
}

async function main() {
  const opts = options();
  if (!opts.check) ensureWrk();
  const cpus = benchCpus();
  printPreamble('streamed response: OpenAI-to-Anthropic translation against passthrough', opts, cpus);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-formats-bench-'));
  try {
    const writeConfig = (mockLlmHost, port, adminPort) => ({ file: writeTollgateConfig(dir, 'formats', { port, adminPort, routes: routes(mockLlmHost) }), requests: REQUESTS });
    const { url, proxy } = await startTollgateOnMock({ cpus, writeConfig });
    if (opts.check) {
      console.log(`every variant answers: ${VARIANTS.join(', ')}`);
      return;
    }
    const runs = await runRounds({ url, proxy, variants: VARIANTS, requests: REQUESTS, opts, cpus, dir });
    printCpuTable(runs, VARIANTS, 'messages', TARGETS);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

runBench('formats', main);
