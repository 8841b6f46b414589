// The built `mock-llm` binary, spawned as bench scripts and other packages' tests do.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '@tollgate/testkit';
import { SseReader, chatBody, fetchRaw, send, start } from './helpers.js';

const bin = fileURLToPath(new URL('../bin/mock-llm.js', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];

function spawnCli(args: string[]): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, [bin, ...args], { stdio: 'pipe' });
  children.push(child);
  return child;
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

async function run(args: string[]): Promise<Finished> {
  const child = spawnCli(args);
  return finish(child);
}

async function finish(child: ChildProcessWithoutNullStreams): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

/** Resolves with the first stdout line, the one scripts wait for. */
async function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  const lines = createInterface({ input: child.stdout });
  const [line] = (await once(lines, 'line')) as [string];
  lines.close();
  return line;
}

describe('mock-llm CLI', () => {
  it('prints the listening line, serves, and exits 0 on SIGTERM', async () => {
    const child = spawnCli(['--port', '0', '--model', 'gpt-4o', '--latency-ms-per-token', '0']);
    const line = await firstLine(child);
    const match = /^mock-llm listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(line);
    expect(match).not.toBeNull();
    const url = match?.[1] ?? '';
    expect((await fetchRaw(`${url}/healthz`)).status).toBe(200);
    const models = await fetchRaw(`${url}/v1/models`);
    expect(models.text).toContain('"id":"gpt-4o"');

    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = finish(child);
    child.kill('SIGTERM');
    const result = await exited;
    expect(result).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(stdout).toBe('');
  });

  it('exits 0 on SIGINT with a stream in flight that outlives --drain-seconds', async () => {
    const child = spawnCli(['--port', '0', '--latency-ms-per-token', '600000', '--drain-seconds', '0']);
    const url = (await firstLine(child)).replace('mock-llm listening on ', '');
    const reader = new SseReader(
      await send(`${url}/v1/chat/completions`, { method: 'POST', body: chatBody({ stream: true }) }),
    );
    expect(await reader.next()).toMatch(/^data: /);
    const exited = finish(child);
    child.kill('SIGINT');
    expect(await exited).toMatchObject({ code: 0, signal: null });
  });

  it('on SIGTERM, refuses new connections, finishes the stream in flight and exits 0', async () => {
    const child = spawnCli(['--port', '0', '--latency-ms-per-token', '50', '--completion-tokens', '20']);
    const url = (await firstLine(child)).replace('mock-llm listening on ', '');
    const res = await send(`${url}/v1/chat/completions`, { method: 'POST', body: chatBody({ stream: true }) });
    const reader = new SseReader(res);
    expect(await reader.next()).toMatch(/^data: /);
    const exited = finish(child);
    child.kill('SIGTERM');
    // The listener is closed at once: a new connection is refused while the stream goes on.
    await until(async () => ((await fetchRaw(`${url}/healthz`).catch((e: unknown) => e)) instanceof Error ? true : undefined));
    expect((await reader.all()).at(-1)).toBe('data: [DONE]');
    expect(reader.error).toBeUndefined();
    expect(await exited).toMatchObject({ code: 0, signal: null });
  });

  it('prints help with every knob and examples', async () => {
    const result = await run(['--help']);
    expect(result.code).toBe(0);
    for (const text of [
      'Usage:',
      '--port',
      '--host',
      '--latency-ms-per-token',
      '--completion-tokens',
      '--model',
      'x-mock-prompt-tokens',
      'x-mock-completion-tokens',
      'x-mock-usage: none',
      'x-mock-latency-ms-per-token',
      'x-mock-delay-ms',
      'x-mock-status',
      'x-mock-retry-after',
      'x-mock-error: reset',
      'x-mock-error: reset-mid-stream',
      'Examples:',
    ]) {
      expect(result.stdout).toContain(text);
    }
  });

  it('prints the package version', async () => {
    const result = await run(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it.each([
    [['--port', '0', '--bogus'], 'mock-llm: unknown option --bogus (see mock-llm --help)\n'],
    [['--port', 'eighty'], "mock-llm: --port must be an integer from 0 to 65535, got 'eighty' (see mock-llm --help)\n"],
    [[], 'mock-llm: --port is required (use --port 0 to pick a free port) (see mock-llm --help)\n'],
    [['--port'], 'mock-llm: option --port needs a value (see mock-llm --help)\n'],
    [['--port', '0', 'extra'], 'mock-llm: unexpected argument extra (see mock-llm --help)\n'],
    [['--port', '0', '--latency-ms-per-token=-5'], "mock-llm: --latency-ms-per-token must be an integer from 0 to 600000, got '-5' (see mock-llm --help)\n"],
    [['--port', '-1'], "mock-llm: option --port needs a value (write --port=<value> for one starting with '-') (see mock-llm --help)\n"],
    [['--port', '0', '--help=yes'], 'mock-llm: option --help takes no value (see mock-llm --help)\n'],
    [['--port', '0', '--model', ' '], 'mock-llm: --model must not be empty (see mock-llm --help)\n'],
    [['--port', '70000'], "mock-llm: --port must be an integer from 0 to 65535, got '70000' (see mock-llm --help)\n"],
    [['--port', '0', '--host', ''], "mock-llm: --host got '': the host is empty; expected a DNS name or an IP address, e.g. 127.0.0.1 or llm.internal (see mock-llm --help)\n"],
    [['--port', '0', '--api-key-header', 'api-key'], 'mock-llm: --api-key-header needs --api-key-file (see mock-llm --help)\n'],
    [['--port', '0', '--api-key-file', '/nonexistent/key'], "mock-llm: --api-key-file '/nonexistent/key' cannot be read: ENOENT (see mock-llm --help)\n"],
    [['--port', '0', '--api-key-file', '/dev/null'], "mock-llm: --api-key-file '/dev/null' must hold one key of visible ASCII characters (at most 4096) (see mock-llm --help)\n"],
    [['--port', '0', '--api-key-file', '/etc/hostname', '--api-key-header', 'cookie'], "mock-llm: --api-key-header must be one of authorization, api-key, x-api-key, got 'cookie' (see mock-llm --help)\n"],
    [['--port', '0', '--host', '300.0.0.1'], "mock-llm: --host got '300.0.0.1': 300.0.0.1 is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1) (see mock-llm --help)\n"],
  ])('exits 2 with one line on stderr for %j', async (args, stderr) => {
    const result = await run(args);
    expect(result).toMatchObject({ code: 2, stdout: '', stderr });
  });

  it('with --api-key-file, answers 401 invalid_api_key without the key and serves with it, in the header asked for', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mock-llm-key-'));
    try {
      writeFileSync(join(dir, 'key'), ' sk-provider-0001\n');
      const child = spawnCli(['--port', '0', '--api-key-file', join(dir, 'key'), '--api-key-header', 'x-api-key']);
      const url = /(http:\/\/\S+)$/.exec(await firstLine(child))![1]!;
      const without = await fetchRaw(`${url}/v1/models`);
      expect(without.status).toBe(401);
      expect(without.text).toContain('invalid_api_key');
      expect((await fetchRaw(`${url}/v1/models`, { headers: { authorization: 'Bearer sk-provider-0001' } })).status).toBe(401);
      expect((await fetchRaw(`${url}/v1/models`, { headers: { 'x-api-key': 'sk-provider-0001' } })).status).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 1 with a clear message when the port is in use', async () => {
    const taken = await start();
    const result = await run(['--port', String(taken.port)]);
    expect(result).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `mock-llm: cannot listen on 127.0.0.1:${taken.port}: port ${taken.port} is already in use\n`,
    });
  });
});
