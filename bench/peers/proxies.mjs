// The two proxies the peer bench compares, each started once for the whole run with both
// routes (configs.mjs), pinned to the same CPU, and each ready when it answers the plain
// request correctly.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MOCK_LLM_BIN, ROOT } from '../lib/cases.mjs';
import { freePort, isBindListening, startProcess } from '../lib/procs.mjs';
import { REQUESTS, waitUntilAnswering } from '../lib/requests.mjs';
import { writeAgentgatewayConfig, writeTollgateConfig } from './configs.mjs';

/**
 * The backends every proxy forwards to, each its own process pinned to `cpu` (null: not
 * pinned): the fixed-response backend (bench/backend.mjs) and mock-llm. Resolves to the env
 * fields `backend` and `mockLlm`, each `{ url, host }`.
 */
export async function startPeerBackends(cpu) {
  const started = async (name, args, prefix) => {
    const proc = startProcess(name, process.execPath, [...args, '--port', '0'], { cpu });
    const u = new URL((await proc.waitForLine((l) => l.startsWith(prefix), 15_000)).slice(prefix.length).trim());
    return { url: u.origin, host: u.host };
  };
  const backend = await started('backend', [join(ROOT, 'bench/backend.mjs')], 'backend listening on ');
  const mockLlm = await started('mock-llm', [MOCK_LLM_BIN], 'mock-llm listening on ');
  return { backend, mockLlm };
}

/**
 * Tollgate from the checkout `root` (built), with extra node flags (e.g. --max-semi-space-size);
 * `id` tells two checkouts apart in one run (a change and its baseline). `args`: extra flags of
 * tollgate itself (e.g. --workers 2); `config(dir, { port, adminPort, backendHost, mockLlmHost })`
 * writes the config and returns its file (default: the peer bench's two routes); `env`: variables
 * added to its environment (e.g. the allocator's). Resolves to the proxy's URL, its admin API's
 * URL and its process.
 */
export function tollgate({ root, nodeArgs, node = process.execPath, id = 'tollgate', args = [], config = writeTollgateConfig, env: processEnv = {} }) {
  const bin = join(root, 'packages/proxy/bin/tollgate.js');
  return {
    id,
    label: id === 'tollgate' ? 'Tollgate' : `Tollgate (${id})`,
    skip() {
      return existsSync(join(root, 'packages/proxy/dist/cli.js')) ? null : `${root}/packages/proxy is not built (run pnpm build)`;
    },
    async start(env) {
      const port = await freePort();
      const dir = join(env.dir, id);
      mkdirSync(dir, { recursive: true });
      const adminPort = await freePort();
      const file = config(dir, { port, adminPort, backendHost: env.backend.host, mockLlmHost: env.mockLlm.host });
      const side = ['--metrics-addr', `127.0.0.1:${await freePort()}`, '--readiness-addr', `127.0.0.1:${await freePort()}`];
      const prof = env.profileDir ? ['--cpu-prof', '--cpu-prof-dir', env.profileDir] : [];
      const proc = startProcess(id, node, [...nodeArgs, ...prof, bin, '--file', file, ...side, ...args], { cpu: env.cpus.proxy, env: processEnv });
      await proc.waitForLine(isBindListening, 120_000);
      return { url: `http://127.0.0.1:${port}`, adminUrl: `http://127.0.0.1:${adminPort}`, proc };
    },
  };
}

/**
 * agentgateway from the binary at `bin` (AGENTGATEWAY_BIN), one worker thread (the
 * counterpart of Node's one JavaScript thread), admin/stats/readiness on loopback ports.
 */
export function agentgateway({ bin }) {
  return {
    id: 'agentgateway',
    label: 'agentgateway',
    skip() {
      if (!bin) return 'AGENTGATEWAY_BIN is not set (build it as docs/benchmarks.md says, then AGENTGATEWAY_BIN=<path>/agentgateway)';
      return existsSync(bin) ? null : `AGENTGATEWAY_BIN=${bin} does not exist`;
    },
    async start(env) {
      const port = await freePort();
      const dir = join(env.dir, 'agentgateway');
      mkdirSync(dir, { recursive: true });
      const file = writeAgentgatewayConfig(dir, { port, backendHost: env.backend.host, mockLlmHost: env.mockLlm.host });
      const proc = startProcess('agentgateway', bin, ['-f', file], {
        cpu: env.cpus.proxy,
        cwd: dir,
        env: {
          WORKER_THREADS: '1',
          ADMIN_ADDR: `127.0.0.1:${await freePort()}`,
          STATS_ADDR: `127.0.0.1:${await freePort()}`,
          READINESS_ADDR: `127.0.0.1:${await freePort()}`,
          // Request logs off the hot path, as Tollgate's are at level info.
          RUST_LOG: 'warn',
        },
      });
      const url = `http://127.0.0.1:${port}`;
      await Promise.race([
        waitUntilAnswering(url, REQUESTS.fixed, 60_000),
        proc.exited.then((code) => Promise.reject(new Error(`agentgateway exited (${code})\n${proc.tail}`))),
      ]);
      return { url, proc };
    },
  };
}
