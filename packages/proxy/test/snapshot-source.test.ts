// The snapshot-source seam: a proxy process fed by a source other than the config file (here
// one that pushes snapshots the way a controller stream will) serves what it pushes through
// the same apply path, learns whether each snapshot was applied or refused, and shows its
// state in /debug/tasks. Real sockets throughout.
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { standaloneToSnapshot, validateStandaloneConfig, type ProxySnapshot } from '@tollgate/api';
import { afterEach, describe, expect, it } from 'vitest';
import { ProxyProcess } from '../src/process/proxy-process.js';
import type { SnapshotSink, SnapshotSource, SnapshotSourceState } from '../src/source/snapshot-source.js';
import { echoed, onFreePort, send, simpleConfig, startUpstream, testWorkers } from './helpers.js';

/** Delivers snapshots when told to and records the outcome of each, as a stream source acknowledges them. */
class PushSource implements SnapshotSource {
  readonly name = 'test stream';
  sink: SnapshotSink | null = null;
  readonly outcomes: string[] = [];
  version: string | null = null;
  async start(sink: SnapshotSink): Promise<void> {
    this.sink = sink;
  }
  stop(): void {
    this.sink = null;
  }
  async push(snapshot: ProxySnapshot): Promise<void> {
    try {
      await this.sink!.apply(snapshot);
      this.version = snapshot.version;
      this.outcomes.push(`ack ${snapshot.version}`);
    } catch (err) {
      this.outcomes.push(`nack ${snapshot.version}: ${(err as Error).message}`);
    }
  }
  state(): SnapshotSourceState {
    return { kind: 'test', applied: this.outcomes.filter((o) => o.startsWith('ack')).length, refused: this.outcomes.filter((o) => o.startsWith('nack')).length, lastError: null, version: this.version };
  }
}

function snapshotOf(config: Record<string, unknown>): ProxySnapshot {
  return standaloneToSnapshot(validateStandaloneConfig(config, 'pushed'), { kind: 'controller', gateway: 'edge/public' });
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('a snapshot source other than the file', () => {
  it('serves what it pushes, learns what was refused, and shows its state in /debug/tasks', async () => {
    const up = await startUpstream();
    cleanups.push(() => up.close());
    const proc = await ProxyProcess.start({
      settings: {},
      source: () => new PushSource(),
      adminAddr: '127.0.0.1:0',
      metricsAddr: '127.0.0.1:0',
      readinessAddr: '127.0.0.1:0',
      logDestination: new Writable({ write: (_c, _e, cb) => cb() }),
      workers: testWorkers(),
    });
    cleanups.push(() => proc.close());
    const readiness = `http://${proc.ops.readiness.address}/healthz/ready`;
    // Started, nothing pushed yet: not ready.
    const before = await send(readiness);
    expect([before.status, before.body]).toEqual([503, 'no config loaded\n']);

    // A push that loses its probed port to another process before binding it is tried again.
    const { port, first } = await onFreePort(async (port) => {
      const first = snapshotOf(simpleConfig(port, [{ name: 'a', backends: [{ host: up.host }] }]));
      await proc.source.push(first);
      if (proc.source.outcomes.at(-1) !== `ack ${first.version}`) throw new Error(proc.source.outcomes.pop());
      return { port, first };
    });
    expect(echoed(await send(`http://127.0.0.1:${port}/x`)).url).toBe('/x');
    expect((await send(readiness)).status).toBe(200);

    // A snapshot the runtime cannot apply (its new port is taken) is refused back to the source.
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    cleanups.push(() => new Promise((r) => taken.close(() => r())));
    const takenPort = (taken.address() as { port: number }).port;
    const second = snapshotOf({ binds: [...(simpleConfig(port, [{ name: 'a', backends: [{ host: up.host }] }]).binds as unknown[]), ...(simpleConfig(takenPort, [], { name: 'other' }).binds as unknown[])] });
    await proc.source.push(second);
    expect(proc.source.outcomes).toEqual([`ack ${first.version}`, expect.stringMatching(new RegExp(`^nack ${second.version}: bind 0\\.0\\.0\\.0:${takenPort} \\(listener other\\) is already in use`))]);
    expect(proc.snapshot.version).toBe(first.version);
    expect((await send(`http://127.0.0.1:${port}/x`)).status).toBe(200);

    const tasks = JSON.parse((await send(`http://${proc.admin.address}/debug/tasks`)).body) as { background: { name: string }[] };
    expect(tasks.background[0]).toEqual({ name: 'test stream', kind: 'test', applied: 1, refused: 1, lastError: null, version: first.version });
    // Serving on several threads, the worker threads are a background task of their own.
    expect(tasks.background.map((t) => t.name)).toEqual(['test stream', ...(proc.workers ? ['workers'] : [])]);
    const dump = JSON.parse((await send(`http://${proc.admin.address}/config_dump`)).body) as { source: unknown };
    expect(dump.source).toEqual({ kind: 'controller', gateway: 'edge/public' });
  });
});
