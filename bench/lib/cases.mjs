// The benchmark cases, in the order they run and print. A case names the request it sends,
// its group (ratios are taken against the group's `direct` and `peer` cases) and how to
// start the server under test; the shared backends (the fixed-response backend, mock-llm)
// are started once by run.mjs. To add a case, append an entry: e.g. an LLM route with a
// rate-limit policy is tollgateCase(...) with chatRoute(host, { traffic: { rateLimit: ... } }).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { routeTable, chatRoute, writeNginxConfig, writeTollgateConfig } from './configs.mjs';
import { commands, freePort, isBindListening, startProcess } from './procs.mjs';
import { waitUntilAnswering, REQUESTS } from './requests.mjs';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const TOLLGATE_BIN = join(ROOT, 'packages/proxy/bin/tollgate.js');
export const MOCK_LLM_BIN = join(ROOT, 'packages/mock-llm/bin/mock-llm.js');
const FASTIFY_PROXY = join(ROOT, 'bench/fastify-http-proxy.mjs');

/** node plus the extra flags for this case (--cpu-prof when profiling it). */
function nodeArgs(env, id, args) {
  if (env.profile !== id) return args;
  const dir = join(env.dir, 'profiles');
  mkdirSync(dir, { recursive: true });
  env.profileDir = dir;
  return ['--cpu-prof', '--cpu-prof-dir', dir, ...args];
}

const serverFlags = new Map();
/**
 * The side servers tollgate has besides admin (metrics, readiness) default to fixed ports on
 * 0.0.0.0; give each bench process its own loopback ports, for the flags this build knows.
 */
async function sideServerArgs(bin, node) {
  if (!serverFlags.has(bin)) {
    const help = execFileSync(node, [bin, '--help'], { encoding: 'utf8' });
    serverFlags.set(bin, ['metrics-addr', 'readiness-addr'].filter((f) => help.includes(`--${f}`)));
  }
  const args = [];
  for (const flag of serverFlags.get(bin)) args.push(`--${flag}`, `127.0.0.1:${await freePort()}`);
  return args;
}

/**
 * A tollgate process serving `routes(env)` on one bind; ready when its bind logs `listening`.
 * `root` is the checkout whose build runs (another one for --baseline), with the Node binary
 * `node` (another one for --baseline-node).
 */
function tollgateCase({ id, label, group, request, routes, listenerPolicies, root = ROOT, node = process.execPath }) {
  const bin = join(root, 'packages/proxy/bin/tollgate.js');
  return {
    id,
    label,
    group,
    request,
    tollgate: { routes, listenerPolicies },
    skip(env) {
      if (!existsSync(join(root, 'packages/proxy/dist/cli.js'))) return `${root === ROOT ? 'packages/proxy' : `${root}/packages/proxy`} is not built (run pnpm build there)`;
      return request === 'chat' ? env.mockLlmSkip : null;
    },
    async start(env) {
      const port = await freePort();
      const adminPort = await freePort();
      const dir = join(env.dir, id);
      mkdirSync(dir, { recursive: true });
      const file = writeTollgateConfig(dir, id, { port, adminPort, routes: routes(env), listenerPolicies });
      const args = [bin, '--file', file, ...(await sideServerArgs(bin, node))];
      const proc = startProcess(`tollgate (${id})`, node, nodeArgs(env, id, args), { cpu: env.cpus.server });
      await proc.waitForLine(isBindListening, 180_000);
      return { url: `http://127.0.0.1:${port}`, proc };
    },
  };
}

function fastifyProxyCase({ id, label, group, request, role, upstream }) {
  return {
    id,
    label,
    group,
    role,
    request,
    skip: (env) => (request === 'chat' ? env.mockLlmSkip : null),
    async start(env) {
      const proc = startProcess(`@fastify/http-proxy (${id})`, process.execPath, nodeArgs(env, id, [FASTIFY_PROXY, '--upstream', upstream(env)]), {
        cpu: env.cpus.server,
      });
      const line = await proc.waitForLine((l) => l.startsWith('fastify-http-proxy listening on '), 30_000);
      return { url: line.slice('fastify-http-proxy listening on '.length).trim(), proc };
    },
  };
}

export const CASES = [
  {
    id: 'direct',
    label: 'backend direct',
    group: 'fixed',
    role: 'direct',
    request: 'fixed',
    async start(env) {
      return { url: env.backend.url, proc: null };
    },
  },
  fastifyProxyCase({
    id: 'fastify-http-proxy',
    label: 'bare @fastify/http-proxy',
    group: 'fixed',
    role: 'peer',
    request: 'fixed',
    upstream: (env) => env.backend.url,
  }),
  {
    id: 'nginx',
    label: 'nginx reverse proxy',
    group: 'fixed',
    request: 'fixed',
    skip: () => (commands.nginx ? null : 'nginx is not installed (apt-get install -y nginx-light)'),
    async start(env) {
      const port = await freePort();
      const { file, prefix } = writeNginxConfig(env.dir, { port, upstreamPort: env.backend.port });
      const proc = startProcess('nginx', commands.nginx, ['-p', prefix, '-c', file, '-e', join(prefix, 'error.log')], { cpu: env.cpus.server });
      const url = `http://127.0.0.1:${port}`;
      await Promise.race([
        waitUntilAnswering(url, REQUESTS.fixed, 15_000),
        proc.exited.then((code) => Promise.reject(new Error(`nginx exited (${code})\n${proc.tail}`))),
      ]);
      return { url, proc };
    },
  },
  tollgateCase({
    id: 'tollgate-1-route',
    label: 'tollgate, 1 route',
    group: 'fixed',
    request: 'fixed',
    routes: (env) => routeTable(1, env.backend.host),
  }),
  tollgateCase({
    id: 'tollgate-10k-routes',
    label: 'tollgate, 10,000 routes',
    group: 'fixed',
    request: 'fixed',
    routes: (env) => routeTable(10_000, env.backend.host),
  }),
  {
    id: 'llm-direct',
    label: 'mock-llm direct (chat)',
    group: 'llm',
    role: 'direct',
    request: 'chat',
    skip: (env) => env.mockLlmSkip,
    async start(env) {
      return { url: env.mockLlm.url, proc: null };
    },
  },
  fastifyProxyCase({
    id: 'llm-fastify-http-proxy',
    label: 'bare @fastify/http-proxy -> mock-llm (chat)',
    group: 'llm',
    role: 'peer',
    request: 'chat',
    upstream: (env) => env.mockLlm.url,
  }),
  tollgateCase({
    id: 'llm-tollgate',
    label: 'tollgate, LLM route -> mock-llm (chat)',
    group: 'llm',
    request: 'chat',
    routes: (env) => [chatRoute(env.mockLlm.host)],
  }),
  // The same LLM route with a local requests + tokens policy set so high it never refuses:
  // the cost of counting (a bucket take, the request body read and parsed, the response usage
  // read) against the route without policy.
  tollgateCase({
    id: 'llm-tollgate-ratelimited',
    label: 'tollgate, LLM route + requests/tokens limits (never refusing)',
    group: 'llm',
    request: 'chat',
    routes: (env) => [
      chatRoute(env.mockLlm.host, {
        traffic: { rateLimit: { local: [{ requests: 2_000_000_000, unit: 'Seconds' }, { tokens: 2_000_000_000, unit: 'Seconds' }] } },
      }),
    ],
  }),
];

/**
 * The tollgate cases again, run from another checkout (built), as `<id>@baseline`: the same
 * configs, load and rounds, so a change is compared with what it changed in one run.
 */
export function baselineCases(root, node = process.execPath) {
  return CASES.filter((c) => c.tollgate).map((c) =>
    tollgateCase({ id: `${c.id}@baseline`, label: `${c.label} [baseline]`, group: c.group, request: c.request, root, node, ...c.tollgate }),
  );
}
