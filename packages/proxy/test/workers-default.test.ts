// How many threads the `tollgate` command serves on: every CPU the process may use unless
// config.workers or --workers (which overrides it) gives a count. In-process proxies (the
// other tests) serve on one thread unless told otherwise.
import { rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveWorkers } from '../src/process/workers/worker-count.js';
import { onFreePort, send, simpleConfig, startUpstream } from './helpers.js';
import { spawnProxy, type SpawnedProxy } from './spawned-proxy.js';
import { PROCESS_TIMEOUT_MS } from './support/tollgate-child.js';

let dir: string;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-workers-default-'));
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

/** bin/tollgate.js on `port`, one route to the upstream, the config's `config:` section as given. */
async function start(port: number, settings: Record<string, unknown>, args: string[]): Promise<SpawnedProxy & { port: number }> {
  const file = join(dir, `config-${port}.json`);
  await writeFile(file, JSON.stringify({ ...simpleConfig(port, [{ name: 'api', backends: [{ host: upstream.host }] }]), config: settings }));
  return { ...(await spawnProxy(file, [], args)), port };
}

/** The threads GET /workers lists once every one of them serves. */
async function servingThreads(p: SpawnedProxy): Promise<number> {
  let count = 0;
  await expect
    .poll(async () => {
      if (p.child.exitCode !== null) throw new Error(`the proxy exited (${p.child.exitCode}):\n${p.output()}`);
      const body = JSON.parse((await send(`${p.admin()}/workers`)).body.toString()) as { workers: { state: string }[] };
      count = body.workers.length;
      return body.workers.every((w) => w.state === 'serving');
    }, { timeout: PROCESS_TIMEOUT_MS })
    .toBe(true);
  return count;
}

describe('the threads the tollgate command serves on', { timeout: PROCESS_TIMEOUT_MS }, () => {
  it('without config.workers or --workers: every CPU the process may use (auto), said at start', async () => {
    // The child runs on this machine, in this cgroup: auto comes to the same count here.
    const auto = resolveWorkers('auto').count;
    const p = await onFreePort((port) => start(port, {}, []));
    try {
      expect(p.outcome, p.output()).toBe('listening');
      expect(await servingThreads(p)).toBe(auto);
      expect(p.output()).toContain(`serving on ${auto} thread${auto === 1 ? '' : 's'} (auto: `);
      expect((await send(`http://127.0.0.1:${p.port}/x`)).status).toBe(200);
    } finally {
      await p.stop();
    }
  });

  it('config.workers sets the count, and --workers overrides it', async () => {
    const fromConfig = await onFreePort((port) => start(port, { workers: 2 }, []));
    try {
      expect(fromConfig.outcome, fromConfig.output()).toBe('listening');
      expect(await servingThreads(fromConfig)).toBe(2);
      expect(fromConfig.output()).not.toContain('(auto: ');
    } finally {
      await fromConfig.stop();
    }
    const fromFlag = await onFreePort((port) => start(port, { workers: 2 }, ['--workers', '1']));
    try {
      expect(fromFlag.outcome, fromFlag.output()).toBe('listening');
      expect(await servingThreads(fromFlag)).toBe(1);
      expect((await send(`http://127.0.0.1:${fromFlag.port}/x`)).status).toBe(200);
    } finally {
      await fromFlag.stop();
    }
  });
});
