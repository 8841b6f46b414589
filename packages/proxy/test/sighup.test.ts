// SIGHUP to a real `tollgate` process reloads its config file: a good file is applied, a bad
// one refused with a log line naming the field while the last good config keeps serving, an
// unchanged one logged as such; the process never dies of it. The config is a symlink to a
// file in another directory, which the directory watcher does not see change: only the
// signal can bring the edits in.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { echoed, onFreePort, send, simpleConfig, startUpstream, type Upstream } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A running tollgate whose log lines can be awaited. */
async function startTollgate(file: string): Promise<{ child: ChildProcess; next: (re: RegExp) => Promise<string> }> {
  const child = spawn(process.execPath, [BIN, '-f', file, '--admin-addr', '127.0.0.1:0', '--metrics-addr', '127.0.0.1:0', '--readiness-addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const seen: string[] = [];
  const waiters: { re: RegExp; resolve: (m: string) => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = String((JSON.parse(line) as { msg: unknown }).msg);
    const w = waiters.findIndex((x) => x.re.test(msg));
    if (w >= 0) waiters.splice(w, 1)[0]!.resolve(msg);
    else seen.push(msg);
  });
  const next = (re: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const i = seen.findIndex((m) => re.test(m));
      if (i >= 0) return resolve(seen.splice(i, 1)[0]!);
      waiters.push({ re, resolve });
      child.once('exit', (code, signal) => reject(new Error(`tollgate exited (${code ?? signal}) while waiting for ${re}: ${stderr}`)));
    });
  await next(/^serving config /);
  return { child, next };
}

function tagged(up: Upstream, name: string) {
  return { name, filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-route', value: name }] } }], backends: [{ host: up.host }] };
}

describe('SIGHUP', () => {
  it('reloads a good file, refuses a bad one naming the field, reports an unchanged one, and keeps running', async () => {
    const up = await startUpstream();
    const real = await mkdtemp(join(tmpdir(), 'tollgate-hup-real-'));
    const linked = await mkdtemp(join(tmpdir(), 'tollgate-hup-link-'));
    cleanups.push(() => up.close(), () => rm(real, { recursive: true, force: true }), () => rm(linked, { recursive: true, force: true }));
    const target = join(real, 'config.yaml');
    const file = join(linked, 'config.yaml');
    await symlink(target, file);
    // A port another process took between probe and bind makes tollgate exit: started again on another.
    const { port, child, next } = await onFreePort(async (port) => {
      await writeFile(target, stringify(simpleConfig(port, [tagged(up, 'first')])));
      return { port, ...(await startTollgate(file)) };
    });
    const url = `http://127.0.0.1:${port}/x`;
    expect(echoed(await send(url)).headers['x-route']).toBe('first');

    // A good edit, brought in by the signal.
    await writeFile(target, stringify(simpleConfig(port, [tagged(up, 'second')])));
    child.kill('SIGHUP');
    expect(await next(/^SIGHUP received/)).toBe(`SIGHUP received: reloading ${file}`);
    expect(await next(/^config reloaded: now serving /)).toMatch(/^config reloaded: now serving [0-9a-f]{12}$/);
    expect(echoed(await send(url)).headers['x-route']).toBe('second');

    // A bad edit: refused, naming the field; the last good config keeps serving.
    await writeFile(target, stringify(simpleConfig(port, [{ name: 'second', backends: [{ host: 'no-port-here' }] }])));
    child.kill('SIGHUP');
    const refused = await next(/^config reload refused/);
    expect(refused).toContain('binds[0].listeners[0].routes[0].backends[0].host');
    expect(refused).toContain('"no-port-here"');
    expect(echoed(await send(url)).headers['x-route']).toBe('second');

    // Back to the serving content: nothing to apply.
    await writeFile(target, stringify(simpleConfig(port, [tagged(up, 'second')])));
    child.kill('SIGHUP');
    expect(await next(/^config file unchanged/)).toMatch(/^config file unchanged; still serving [0-9a-f]{12}$/);

    expect(child.exitCode).toBe(null);
    child.kill('SIGTERM');
    const [code] = await new Promise<[number | null]>((r) => child.once('exit', (c) => r([c])));
    expect(code).toBe(0);
  });
});
