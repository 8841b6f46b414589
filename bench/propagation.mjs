// Snapshot propagation benchmark (bench/propagation.bench.ts) on a real kube-apiserver with
// the controller and proxy processes: route propagation (apply to first 200) and policy
// propagation (patch to every proxy ACKed), and budget propagation (the same for an edit of a
// keyed token budget); and churn: requests through the proxies, every answer counted by status,
// while the backends' EndpointSlice rolls as in a Deployment's rollout and routes are edited and
// added (what must hold: no answer other than 200). Printed, not asserted. Run after `pnpm build`:
//   node bench/propagation.mjs                      # 300 routes; policy at 1k routes, 1 and 10 proxies
//   node bench/propagation.mjs --full               # 3,000 routes, one at a time
//   node bench/propagation.mjs --routes 3000 --prefill 2900 --gap-ms 300   # the last 100 at 3k
//   node bench/propagation.mjs --routes 1000 --only routes --gap-ms 300
//   node bench/propagation.mjs --only policy --policy-routes 1000,10000 --proxies 1,10,50 --patches 20
//   node bench/propagation.mjs --only policy,budget --policy-routes 1000 --proxies 10 --patches 20
//   node bench/propagation.mjs --only churn --routes 3000 --churn-seconds 120 --proxy-workers 2
// Needs root (each proxy runs in its own network namespace) and the e2e tools.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    routes: { type: 'string' },
    full: { type: 'boolean' },
    'policy-routes': { type: 'string' },
    proxies: { type: 'string' },
    patches: { type: 'string' },
    'gap-ms': { type: 'string' },
    prefill: { type: 'string' },
    profile: { type: 'string' },
    'profile-seconds': { type: 'string' },
    'proxy-workers': { type: 'string' },
    only: { type: 'string' },
    'churn-seconds': { type: 'string' },
    'churn-proxies': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(`node bench/propagation.mjs [--routes N | --full] [--only routes,policy,budget,churn] [--policy-routes 1000,10000] [--proxies 1,10] [--patches 20] [--churn-seconds 60]
  --routes N          HTTPRoutes added one at a time, each timed to its first 200 (default 300)
  --full              --routes 3000
  --policy-routes L   route counts at which the policy and budget patches are timed (default 1000)
  --proxies L         proxy counts (default 1,10)
  --patches N         patches per (routes, proxies) pair, for policy and for budget (default 20)
  --prefill N         create N routes in bulk first, then time the rest one at a time (default 0)
  --gap-ms N          pause after a route's first 200 (a patch's ACKs) before the next (default 0: back to back)
  --only P            routes, policy, budget, churn or a comma-separated list of them (default:
                      routes,policy,budget; churn runs only when named)
                      policy: a GatewayPolicy's rate limit patched; budget: its keyed token budget
                      (by: { type: Consumer }) patched; each timed to every proxy serving and ACKing it
                      churn: with --routes routes present, 6 client loops send requests spread over
                      them through the proxies, every answer other than 200 an error, while the
                      Service's endpoints roll (a new backend ready, the oldest terminating, then
                      removed and stopped once every proxy serves without it; every third roll
                      replaces the EndpointSlice by a new one), a route is edited each second and
                      one added every 5 s
  --churn-seconds N   how long the churn runs (default 60, at most 600)
  --churn-proxies N   proxies the churn's requests go through (default 1)
  --profile DIR       CPU profiles (pprof) of the controller and the first proxy while routes are
                      timed, or over the churn (at most its length)
  --profile-seconds N their length (default 60)
  --proxy-workers N   threads each proxy serves on (--workers; default 1: the proxy command's
                      default; a Gateway's pods run --workers auto, their CPU quota)`);
  process.exit(0);
}
const positive = (name, v) => {
  if (v === undefined) return undefined;
  if (!/^\d+(,\d+)*$/.test(v)) {
    console.error(`--${name}: got "${v}"; expected a positive integer${name.endsWith('s') ? ' or a comma-separated list' : ''}`);
    process.exit(2);
  }
  return v;
};
const PARTS = ['routes', 'policy', 'budget', 'churn'];
if (values.only !== undefined && !values.only.split(',').every((p) => PARTS.includes(p))) {
  console.error(`--only: got "${values.only}"; expected ${PARTS.join(', ')} or a comma-separated list of them`);
  process.exit(2);
}
const env = { ...process.env };
const set = (k, v) => v !== undefined && (env[k] = v);
set('BENCH_ROUTES', values.full ? '3000' : positive('routes', values.routes));
set('BENCH_POLICY_ROUTES', positive('policy-routes', values['policy-routes']));
set('BENCH_PROXIES', positive('proxies', values.proxies));
set('BENCH_PATCHES', positive('patches', values.patches));
set('BENCH_ONLY', values.only);
set('BENCH_GAP_MS', positive('gap-ms', values['gap-ms']));
set('BENCH_PREFILL', positive('prefill', values.prefill));
set('BENCH_PROFILE_DIR', values.profile);
set('BENCH_PROFILE_SECONDS', positive('profile-seconds', values['profile-seconds']));
set('BENCH_PROXY_WORKERS', positive('proxy-workers', values['proxy-workers']));
const churnSeconds = positive('churn-seconds', values['churn-seconds']);
if (churnSeconds !== undefined && (Number(churnSeconds) < 1 || Number(churnSeconds) > 600)) {
  console.error(`--churn-seconds: got ${churnSeconds}; expected 1 to 600`);
  process.exit(2);
}
set('BENCH_CHURN_SECONDS', churnSeconds);
set('BENCH_CHURN_PROXIES', positive('churn-proxies', values['churn-proxies']));
const child = spawn('npx', ['vitest', 'run', '--config', 'bench/vitest.config.ts', 'bench/propagation.bench.ts', '--silent=false', '--reporter=verbose'], { cwd: ROOT, env, stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
