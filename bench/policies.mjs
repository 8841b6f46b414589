#!/usr/bin/env node
// What cors, csrf, directResponse and extProc cost on the LLM route: one Tollgate, one LLM route per
// variant (the peer bench's metered chat route, never-refusing limits), told apart by hostname:
// no policy; cors (a cross-origin POST from an allowed origin, with credentials and exposed
// headers: the Vary and Access-Control-* headers on the answer); csrf (a POST whose Origin is
// the request's own: the check passes); directResponse (the route answers by itself, so no
// backend call at all); a cors preflight (OPTIONS answered by the gateway); and extProc with
// its default modes, request and response headers only (e2e/tools/ext-proc, the tests' processor
// built on go-control-plane: two messages on a gRPC stream per request, each setting headers). The variants
// take turns within each round, the proxy pinned to one CPU; the table gives medians and each
// variant's CPU per request against no policy: the median of its per-round ratios. Printed,
// not asserted.
//
//   pnpm build && node bench/policies.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { REQUESTS } from './lib/requests.mjs';
import { writeTollgateConfig } from './lib/configs.mjs';
import { benchOnMock, RATE_OPTION_HELP, ROUND_OPTIONS_HELP, runBench, variantOptions } from './lib/variants.mjs';
import { ensureWrk } from './peers/wrk.mjs';
import { startExtProc } from './peers/ext-proc.mjs';

const HELP = `Usage: node bench/policies.mjs [options]

Options:
${ROUND_OPTIONS_HELP}
${RATE_OPTION_HELP}
  --only <variants>  comma-separated: none, cors, csrf, directResponse, preflight, extProc (none is always run)
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['none', 'cors', 'csrf', 'directResponse', 'preflight', 'extProc'];
/** The per-request work each adds to a proxied request: a few header reads and writes. */
const TARGETS = { cors: 1.05, csrf: 1.05 };
const ORIGIN = 'https://app.policies.bench';
const DIRECT_BODY = JSON.stringify({ error: { message: 'down for maintenance', type: 'server_error', code: 'maintenance' } });

/** The processor's address, once started (the extProc variant only). */
let extProcAddress = null;

const host = (v) => `${v.toLowerCase()}.policies.bench`;

function writeFiles(dir, mockLlmHost, port, adminPort) {
  const limits = { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } };
  const cors = { cors: { allowOrigins: [ORIGIN, 'https://*.preview.policies.bench'], allowMethods: ['GET', 'POST'], allowHeaders: ['authorization', 'content-type'], exposeHeaders: ['x-ratelimit-remaining'], allowCredentials: true, maxAge: 600 } };
  const policy = {
    none: {},
    cors,
    // The preflight's route: the same cors.
    preflight: cors,
    csrf: { csrf: { additionalOrigins: [ORIGIN] } },
    directResponse: { directResponse: { status: 200, headers: [{ name: 'Retry-After', value: '60' }], body: { text: DIRECT_BODY } } },
    extProc: extProcAddress ? { extProc: { service: { host: extProcAddress }, messageTimeout: '1s' } } : {},
  };
  const routes = VARIANTS.map((v) => ({
    name: `chat-${v.toLowerCase()}`,
    hostnames: [host(v)],
    matches: [{ path: { type: 'PathPrefix', value: '/v1/chat/completions' } }],
    backends: [{ host: mockLlmHost }],
    policies: { traffic: { ...limits, ...policy[v] } },
  }));
  const file = writeTollgateConfig(dir, 'policies', { port, adminPort, routes });
  const chat = (v, headers) => ({ ...REQUESTS.chat, headers: { ...REQUESTS.chat.headers, host: host(v), ...headers } });
  const requests = {
    none: chat('none', {}),
    cors: chat('cors', { origin: ORIGIN }),
    csrf: chat('csrf', { origin: `http://${host('csrf')}` }),
    directResponse: { ...chat('directResponse', {}), check: (status, body) => status === 200 && body === DIRECT_BODY },
    extProc: chat('extProc', {}),
    preflight: {
      method: 'OPTIONS',
      path: '/v1/chat/completions',
      headers: { host: host('preflight'), origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      body: null,
      check: (status) => status === 204,
    },
  };
  return { file, requests };
}

async function main() {
  const opts = variantOptions(HELP, VARIANTS);
  ensureWrk();
  if (opts.variants.includes('extProc')) extProcAddress = await startExtProc();
  await benchOnMock({ name: 'policies', title: 'cors, csrf, directResponse and extProc cost on the LLM route', opts, targets: TARGETS, writeFiles });
}

runBench('policies', main);
