// The configs the peer bench gives each proxy: the same two routes, written in each proxy's
// own format. A plain route (host api-2.bench.local, PathPrefix /svc/05000) to the
// fixed-response backend, and an LLM route (POST /v1/chat/completions) to mock-llm with a
// local requests limit and a local tokens limit, both so high they never refuse: what is
// measured is the cost of counting (the body read and parsed, the usage read back).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chatRoute, routeTable } from '../lib/configs.mjs';
import { TARGET } from '../lib/requests.mjs';

/** Far above any rate the bench reaches: the limits count every request but never refuse. */
export const NEVER_REFUSING = 2_000_000_000;

/** Tollgate standalone config (JSON, which its YAML loader reads). */
export function writeTollgateConfig(dir, { port, adminPort, backendHost, mockLlmHost }) {
  const routes = [
    ...routeTable(1, backendHost),
    chatRoute(mockLlmHost, {
      traffic: { rateLimit: { local: [{ requests: NEVER_REFUSING, unit: 'Seconds' }, { tokens: NEVER_REFUSING, unit: 'Seconds' }] } },
    }),
  ];
  const config = {
    config: { adminAddr: `127.0.0.1:${adminPort}`, logLevel: 'info', drainTimeout: '1s' },
    binds: [{ port, address: '127.0.0.1', listeners: [{ name: 'bench', protocol: 'HTTP', routes }] }],
  };
  const file = join(dir, 'tollgate.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * agentgateway local config (its YAML loader reads JSON too). The LLM route's backend is an
 * `ai` backend (OpenAI provider, host overridden to mock-llm), which is what makes
 * agentgateway parse the request as a chat completion and read the usage of the response,
 * the counterpart of Tollgate's token-limited route.
 */
export function writeAgentgatewayConfig(dir, { port, backendHost, mockLlmHost }) {
  const limit = (type) => ({ maxTokens: NEVER_REFUSING, tokensPerFill: NEVER_REFUSING, fillInterval: '1s', type });
  const config = {
    binds: [
      {
        port,
        listeners: [
          {
            name: 'bench',
            protocol: 'HTTP',
            routes: [
              {
                name: 'svc-05000',
                hostnames: [TARGET.host],
                matches: [{ path: { pathPrefix: '/svc/05000' } }],
                backends: [{ host: backendHost }],
              },
              {
                name: 'chat',
                matches: [{ path: { pathPrefix: '/v1/chat/completions' }, method: 'POST' }],
                policies: { localRateLimit: [limit('requests'), limit('tokens')] },
                backends: [{ ai: { name: 'mock-llm', hostOverride: mockLlmHost, provider: { openAI: {} } } }],
              },
            ],
          },
        ],
      },
    ],
  };
  const file = join(dir, 'agentgateway.yaml');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}
