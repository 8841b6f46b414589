// What each thread of a proxy process loads, checked in fresh processes whose module loading
// a hook watches (it runs in every thread: worker threads inherit the --import):
// - a worker thread is handed snapshots the main thread validated, serves no admin API and
//   reads no file: it must load neither ajv, nor yaml, nor the profiler;
// - no module of the project imports node:http as an ES module: that import reads every export
//   of node:http, and its WebSocket, CloseEvent and MessageEvent getters load Node's bundled
//   fetch client in that thread (src: @tollgate/kit/node-http).
// And the V8 defaults bin/tollgate.js sets (src/process/v8-defaults.ts), which a flag on the
// node command line overrides.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v8Defaults } from '../src/process/v8-defaults.js';
import { onFreePort, send, simpleConfig, startUpstream, type Upstream } from './helpers.js';
import { spawnProxy, type SpawnedProxy } from './spawned-proxy.js';
const WORKER_REFUSED = ['ajv', 'yaml', '@datadog/pprof'];
const HOOKS = `
import { registerHooks } from 'node:module';
import { isMainThread } from 'node:worker_threads';
const workerRefused = new Set(${JSON.stringify(WORKER_REFUSED)});
registerHooks({
  resolve(specifier, context, next) {
    if (!isMainThread && workerRefused.has(specifier)) throw new Error('refused by the test in a worker thread: ' + specifier);
    const ours = (context.parentURL ?? '').includes('/packages/') && !(context.parentURL ?? '').includes('/node_modules/');
    if (ours && (specifier === 'node:http' || specifier === 'http') && context.conditions.includes('import')) {
      throw new Error('refused by the test: an ES module import of node:http in ' + context.parentURL);
    }
    return next(specifier, context);
  },
});
`;

let dir: string;
let hooks: string;
let upstream: Upstream;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-thread-modules-'));
  hooks = join(dir, 'watch.mjs');
  await writeFile(hooks, HOOKS);
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Starts bin/tollgate.js on `port` with one route to the upstream. */
async function start(port: number, nodeArgs: string[], args: string[]): Promise<SpawnedProxy & { port: number }> {
  const file = join(dir, `config-${port}.json`);
  await writeFile(file, JSON.stringify(simpleConfig(port, [{ name: 'api', matches: [{ path: { type: 'PathPrefix', value: '/' } }], backends: [{ host: upstream.host }] }])));
  return { ...(await spawnProxy(file, nodeArgs, args)), port };
}

/** GET /workers until every thread serves the config, or the process exits. */
async function allThreadsServing(p: SpawnedProxy, threads: number): Promise<unknown> {
  for (;;) {
    if (p.child.exitCode !== null) throw new Error(`the proxy exited (${p.child.exitCode}):\n${p.output()}`);
    const r = await send(`${p.admin()}/workers`);
    const body = JSON.parse(r.body.toString()) as { workers: { state: string; figures: { routes: number } | null }[] };
    if (body.workers.length === threads && body.workers.every((w) => w.state === 'serving' && w.figures?.routes === 1)) return body;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

describe('what each thread loads', () => {
  it('two threads serve, their worker loading neither ajv, yaml nor the profiler, and nothing imports node:http as an ES module', async () => {
    const p = await onFreePort((port) => start(port, ['--import', hooks], ['--workers', '2']));
    try {
      expect(p.outcome, p.output()).toBe('listening');
      await allThreadsServing(p, 2);
      for (let i = 0; i < 8; i++) expect((await send(`http://127.0.0.1:${p.port}/x`)).status).toBe(200);
      // The main thread loads the profiler with its admin server, and it works.
      const heap = await send(`${p.admin()}/debug/pprof/heap`);
      expect(heap.status).toBe(200);
      expect(heap.body.length).toBeGreaterThan(0);
      expect(p.output()).not.toContain('refused by the test');
    } finally {
      await p.stop();
    }
  });
});

describe('V8 defaults', () => {
  it('bin/tollgate.js turns allocation-site pretenuring off, and says so', async () => {
    const p = await onFreePort((port) => start(port, [], []));
    try {
      expect(p.outcome, p.output()).toBe('listening');
      expect(p.output()).toMatch(/"msg":"V8 flags set by the proxy: --no-allocation-site-pretenuring/);
    } finally {
      await p.stop();
    }
  });

  it('a flag on the node command line, either way, takes precedence', async () => {
    const p = await onFreePort((port) => start(port, ['--allocation-site-pretenuring'], []));
    try {
      expect(p.outcome, p.output()).toBe('listening');
      expect(p.output()).not.toContain('V8 flags set by the proxy');
    } finally {
      await p.stop();
    }
  });

  it('reads the node command line and NODE_OPTIONS in every spelling', () => {
    expect(v8Defaults([], '')).toEqual(['--no-allocation-site-pretenuring']);
    expect(v8Defaults(['--max-semi-space-size=16'], '--enable-source-maps')).toEqual(['--no-allocation-site-pretenuring']);
    expect(v8Defaults(['--allocation-site-pretenuring'], '')).toEqual([]);
    expect(v8Defaults(['--no-allocation-site-pretenuring'], '')).toEqual([]);
    expect(v8Defaults(['--allocation_site_pretenuring'], '')).toEqual([]);
    expect(v8Defaults([], '--inspect  --no-allocation-site-pretenuring ')).toEqual([]);
    expect(v8Defaults(['--allocation-site-pretenuring=false'], '')).toEqual([]);
  });
});
