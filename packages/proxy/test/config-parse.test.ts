// Hostile config files: an alias bomb, nesting that exhausts the parser's stack, bytes that are
// not UTF-8, a file past the size limit, two documents. `tollgate --check` (a real child
// process) and the start-up path answer each with exit 2 and a message naming the file and
// the problem, never a stack; a hot reload refuses each and keeps serving.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CONFIG_BYTES } from '../src/config/load-file.js';
import { send, simpleConfig, startGateway, startUpstream } from './helpers.js';

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));

/** Nine anchors, each a list of nine references to the one before: 9^9 strings once expanded. */
const ALIAS_BOMB = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((n, i) => `${n}: &${n} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
  'binds: *i',
].join('\n');

const HOSTILE: [string, string | Buffer, RegExp][] = [
  ['an alias bomb', ALIAS_BOMB, /\(root\): aliases \(\*name\) expand to too much: more than 100 alias references, as in a YAML alias bomb/],
  ['YAML nested 100000 deep', `binds: ${'['.repeat(100_000)}${']'.repeat(100_000)}`, /\(root\): nested too deeply to parse at line 1, column \d+; a config nests a few levels/],
  ['JSON nested 20000 deep', `{"binds": ${'['.repeat(20_000)}${']'.repeat(20_000)}}`, /\(root\): nested too deeply to parse at line 1, column \d+/],
  ['bytes that are not UTF-8', Buffer.from('binds: []\n# caf\xc3\x28\n', 'latin1'), /\(root\): is not UTF-8 text: byte 0xc3 at line 2, column 6 \(byte 15\)/],
  ['two YAML documents', 'binds: []\n---\nbinds: []\n', /\(root\): the file holds more than one YAML document at line 2, column 1; put the whole config in one document/],
  ['a file past the size limit', `binds: []\n${'#'.repeat(MAX_CONFIG_BYTES)}\n`, /cannot read config file .*: it is \d+ bytes, more than the 4194304 bytes \(4 MiB\) a config file may have/],
];

async function hostileFile(content: string | Buffer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-parse-'));
  const file = join(dir, 'config.yaml');
  await writeFile(file, content);
  return file;
}

async function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

// One tollgate process per case: a process start loads the whole proxy (about a second of
// CPU), which on the loaded two-core CI machine waits its turn for tens of seconds.
describe('tollgate --check on a hostile file', { timeout: 120_000 }, () => {
  it.each(HOSTILE)('%s: exit 2, the file and the problem named, no stack', async (_name, content, problem) => {
    const file = await hostileFile(content);
    for (const args of [['--check', '-f', file], ['-f', file, '--admin-addr', '127.0.0.1:0', '--metrics-addr', '127.0.0.1:0', '--readiness-addr', '127.0.0.1:0']]) {
      const r = await run(args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(file);
      expect(r.stderr).toMatch(problem);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  });
});

describe('a hot reload to a hostile file', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  it('is refused with a log line naming the problem; the last good config keeps serving', async () => {
    const up = await startUpstream();
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'a', backends: [{ host: up.host }] }]));
    cleanups.push(() => up.close(), () => gw.close());
    const version = gw.gateway.snapshot.version;
    for (const [name, content, problem] of HOSTILE) {
      gw.logs.lines.length = 0;
      expect(await gw.rewrite(content), name).toBe('refused');
      const line = gw.logs.messages().find((m) => m.startsWith('config reload refused'));
      expect(line, name).toMatch(problem);
      expect(gw.gateway.snapshot.version).toBe(version);
      expect((await send(`${gw.url}/x`)).status).toBe(200);
    }
  });
});
