#!/usr/bin/env node
// What a transformation costs on the LLM route: one Tollgate, one LLM route per variant (the
// peer bench's metered chat route, never-refusing limits, so every variant reads the body),
// told apart by hostname: no transformation; three request header edits (values from the
// request); body edits (a forced model, a capped max_tokens, include_usage on streams); both,
// with a response header removed. The variants take turns within each round, the proxy pinned
// to one CPU; the table gives medians and each variant's CPU per request against none: the
// median of its per-round ratios (a round's variants run back to back). Printed, not asserted.
//
//   pnpm build && node bench/transformation.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { REQUESTS } from './lib/requests.mjs';
import { writeTollgateConfig } from './lib/configs.mjs';
import { benchOnMock, RATE_OPTION_HELP, ROUND_OPTIONS_HELP, runBench, variantOptions } from './lib/variants.mjs';
import { ensureWrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/transformation.mjs [options]

Options:
${ROUND_OPTIONS_HELP}
${RATE_OPTION_HELP}
  --only <variants>  comma-separated: none, headers, body, both (none is always run)
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['none', 'headers', 'body', 'both'];
const TARGETS = { headers: 1.05, body: 1.1, both: 1.15 };

const HEADERS = {
  set: [
    { name: 'x-route', value: '"chat"' },
    { name: 'x-path-length', value: 'size(request.path)' },
  ],
  add: [{ name: 'x-via', value: '"tollgate"' }],
};

const BODY = {
  set: [
    { path: 'model', value: '"mock-gpt"' },
    { path: 'max_tokens', value: 'llm.maxTokens == 0 || llm.maxTokens > 1024 ? 1024 : llm.maxTokens' },
    { path: 'stream_options.include_usage', value: 'true', when: 'llm.stream' },
  ],
  remove: ['max_completion_tokens'],
};

function writeFiles(dir, mockLlmHost, port, adminPort) {
  const limits = { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } };
  const transformation = {
    none: null,
    headers: { request: { headers: HEADERS } },
    body: { request: { body: BODY } },
    both: { request: { headers: HEADERS, body: BODY }, response: { headers: { remove: ['x-unused'] } } },
  };
  const routes = VARIANTS.map((v) => ({
    name: `chat-${v}`,
    hostnames: [`${v}.transformation.bench`],
    matches: [{ path: { type: 'PathPrefix', value: '/v1/chat/completions' }, method: 'POST' }],
    backends: [{ host: mockLlmHost }],
    policies: { traffic: { ...limits, ...(transformation[v] ? { transformation: transformation[v] } : {}) } },
  }));
  const file = writeTollgateConfig(dir, 'transformation', { port, adminPort, routes });
  const requests = Object.fromEntries(VARIANTS.map((v) => [v, { ...REQUESTS.chat, headers: { ...REQUESTS.chat.headers, host: `${v}.transformation.bench` } }]));
  return { file, requests };
}

async function main() {
  const opts = variantOptions(HELP, VARIANTS);
  ensureWrk();
  await benchOnMock({ name: 'transformation', title: 'transformation cost on the LLM route', opts, targets: TARGETS, writeFiles });
}

runBench('transformation', main);
