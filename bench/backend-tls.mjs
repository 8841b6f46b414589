#!/usr/bin/env node
// What TLS to a backend costs: one Tollgate in front of two mock-llms, one serving plain HTTP
// and one HTTPS (a certificate of a CA made here, verified by the proxy with `tls.caFile`).
// Two metered chat routes (never-refusing limits), told apart by hostname, each to one of them;
// the proxy keeps its connections alive, so the rounds measure a request over an established
// TLS session, not handshakes. The variants take turns within each round, the proxy pinned
// to one CPU; the table gives medians and the TLS route's CPU per request against the plain
// one (the median of its per-round ratios). Printed, not asserted.
//
//   pnpm build && node bench/backend-tls.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MOCK_LLM_BIN, ROOT } from './lib/cases.mjs';
import { startProcess, stopAll } from './lib/procs.mjs';
import { REQUESTS } from './lib/requests.mjs';
import { writeTollgateConfig } from './lib/configs.mjs';
import { benchCpus, printCpuTable, printPreamble, RATE_OPTION_HELP, ROUND_OPTIONS_HELP, roundOptions, runBench, runRounds, startTollgateOnMock } from './lib/variants.mjs';
import { ensureWrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/backend-tls.mjs [options]

Options:
${ROUND_OPTIONS_HELP}
${RATE_OPTION_HELP}
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['plain', 'tls'];
/** The bound: TLS to a backend with keep-alive at most +15% CPU per request against plain HTTP. */
const TARGETS = { tls: 1.15 };
const TLS_NAME = 'llm.tls.bench';

/** A CA and a certificate of TLS_NAME it signs, written to `dir`. */
async function certificates(dir) {
  const { issueTestCertificate } = await import(join(ROOT, 'packages/testkit/dist/certificates.js'));
  const ca = issueTestCertificate({ commonName: 'tollgate bench CA', ca: true });
  const leaf = issueTestCertificate({ commonName: TLS_NAME, names: [TLS_NAME, '127.0.0.1'], issuer: ca });
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'llm.crt'), key: join(dir, 'llm.key') };
  writeFileSync(files.ca, ca.cert);
  writeFileSync(files.cert, leaf.cert);
  writeFileSync(files.key, leaf.key, { mode: 0o600 });
  return files;
}

async function main() {
  const opts = roundOptions(HELP).opts;
  ensureWrk();
  const cpus = benchCpus();
  printPreamble('TLS to the backend (keep-alive) against plain HTTP', opts, cpus);
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-backend-tls-bench-'));
  try {
    const files = await certificates(dir);
    const secure = startProcess('mock-llm-tls', process.execPath, [MOCK_LLM_BIN, '--port', '0', '--tls-cert-file', files.cert, '--tls-key-file', files.key], { cpu: cpus.load });
    const line = await secure.waitForLine((l) => l.startsWith('mock-llm listening on '), 15_000);
    const secureHost = new URL(line.slice('mock-llm listening on '.length).trim()).host;
    const policies = { traffic: { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } } };
    const requests = Object.fromEntries(VARIANTS.map((v) => [v, { ...REQUESTS.chat, id: v, headers: { ...REQUESTS.chat.headers, host: `${v}.backend-tls.bench` } }]));
    const writeConfig = (mockLlmHost, port, adminPort) => {
      const backends = { plain: { host: mockLlmHost }, tls: { host: secureHost, tls: { caFile: files.ca, hostname: TLS_NAME } } };
      const routes = VARIANTS.map((v) => ({ name: v, hostnames: [`${v}.backend-tls.bench`], policies, backends: [backends[v]] }));
      return { file: writeTollgateConfig(dir, 'backend-tls', { port, adminPort, routes }), requests };
    };
    const { url, proxy } = await startTollgateOnMock({ cpus, writeConfig });
    const runs = await runRounds({ url, proxy, variants: VARIANTS, requests, opts, cpus, dir });
    printCpuTable(runs, VARIANTS, 'plain', TARGETS);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

runBench('backend-tls', main);
