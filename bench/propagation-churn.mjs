// Scale and churn benchmark (bench/propagation-churn.bench.ts): routes over many namespaces,
// EndpointSlices changing continuously, the controller's and the proxies' heap after a forced
// GC, RSS and CPU every interval, and the heap's growth from minute --from to the end.
// Printed, not asserted. Run after `pnpm build` (needs root and the e2e tools):
//   node bench/propagation-churn.mjs --minutes 3
//   node bench/propagation-churn.mjs --minutes 30 --routes 5000 --namespaces 50
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const FLAGS = {
  minutes: ['BENCH_MINUTES', 'how long the churn runs (default 3)'],
  routes: ['BENCH_ROUTES', 'HTTPRoutes (default 500)'],
  namespaces: ['BENCH_NAMESPACES', 'namespaces the routes and Services are spread over (default 10)'],
  proxies: ['BENCH_PROXIES', 'proxy processes (default 2)'],
  rate: ['BENCH_RATE', 'EndpointSlice writes per second (default 5)'],
  interval: ['BENCH_INTERVAL', 'seconds between samples (default 60)'],
  from: ['BENCH_FROM', 'minute the growth is measured from (default 5)'],
  'gc-reads': ['BENCH_GC_READS', 'forced-GC heap readings per sample, the lowest counts (default 3)'],
};
const { values } = parseArgs({ options: { ...Object.fromEntries(Object.keys(FLAGS).map((k) => [k, { type: 'string' }])), help: { type: 'boolean', short: 'h' } } });
if (values.help) {
  console.log(`node bench/propagation-churn.mjs [flags]\n${Object.entries(FLAGS).map(([k, [, h]]) => `  --${k.padEnd(11)} ${h}`).join('\n')}`);
  process.exit(0);
}
const env = { ...process.env };
for (const [k, [name]] of Object.entries(FLAGS)) {
  const v = values[k];
  if (v === undefined) continue;
  if (!/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0) {
    console.error(`--${k}: got "${v}"; expected a positive number`);
    process.exit(2);
  }
  env[name] = v;
}
const child = spawn('npx', ['vitest', 'run', '--config', 'bench/vitest.config.ts', 'bench/propagation-churn.bench.ts', '--silent=false'], { cwd: ROOT, env, stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
