// The trace core (trace/: session, event stream, inject request, one trace run) stands on its
// own: it imports neither the terminal UI nor the commands, the UI imports the core and not
// the commands, and a trace is driven and cancelled through the core alone, against a real
// proxy: cancelling disarms the session on the server.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GwctlError } from '../src/errors.js';
import { localTarget } from '../src/target/local.js';
import { drive, planTrace } from '../src/trace/run.js';
import { startProxy, type Proxy } from './helpers.js';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Relative imports (static and dynamic) of every file under `dir`, as paths from src/. */
function importsUnder(dir: string): { file: string; imported: string }[] {
  return readdirSync(join(SRC, dir)).flatMap((name) => {
    const text = readFileSync(join(SRC, dir, name), 'utf8');
    return [...text.matchAll(/(?:from|import\()\s*'(\.[^']+)'/g)].map((m) => ({ file: `${dir}/${name}`, imported: join(dir, m[1]!) }));
  });
}

describe('layering', () => {
  it('trace/ imports neither tui/ nor commands/; tui/ does not import commands/', () => {
    const core = importsUnder('trace');
    expect(core.length).toBeGreaterThan(0);
    expect(core.filter((i) => /^(tui|commands)\//.test(i.imported))).toEqual([]);
    const ui = importsUnder('tui');
    expect(ui.some((i) => i.imported.startsWith('trace/'))).toBe(true);
    expect(ui.filter((i) => i.imported.startsWith('commands/'))).toEqual([]);
  });
});

describe('a trace through the core alone', () => {
  let proxy: Proxy;
  beforeAll(async () => {
    proxy = await startProxy();
  });
  afterAll(async () => {
    await proxy.close();
  });

  const armedSessions = async () =>
    (JSON.parse(await (await fetch(`http://${proxy.adminAddr}/debug/tasks`)).text()) as { traceSessions: unknown[] }).traceSessions.length;

  it('cancelling the signal while waiting disarms the session on the server and rejects as interrupted', async () => {
    const abort = new AbortController();
    let armedText = '';
    const run = drive(localTarget(proxy.adminAddr), await planTrace({}, undefined), {
      onEvent: () => undefined,
      onArmed: (text) => {
        armedText = text;
        abort.abort();
      },
      signal: abort.signal,
    });
    const err = await run.then(
      () => null,
      (e: unknown) => e,
    );
    expect(armedText).toMatch(/waiting for the next request from any client/);
    expect(err).toBeInstanceOf(GwctlError);
    expect((err as GwctlError).code).toBe('TG_GWCTL_INTERRUPTED');
    // The server notices the disconnect; poll its task list until the session is gone.
    while ((await armedSessions()) !== 0) await new Promise((r) => setImmediate(r));
    expect(await armedSessions()).toBe(0);
  });
});
