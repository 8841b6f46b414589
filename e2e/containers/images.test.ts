// The project's images as containers (podman, through testcontainers): the proxy serves a
// mounted configuration on a read-only root filesystem as a non-root user and drains in-flight
// requests on SIGTERM; mock-llm serves and stops cleanly.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wait, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exec } from '../lib/exec.js';
import { podmanEnv, projectImage } from '../lib/node/images.js';
import { containersAvailability, startPodmanService, type PodmanService } from '../lib/podman-service.js';
import { ReadOnlyContainer, RUN_ID, RUN_LABEL } from '../lib/read-only-container.js';

const PROXY = projectImage('tollgate');
const MOCK = projectImage('mock-llm');
const availability = await containersAvailability([PROXY, MOCK]);

function ipOf(c: StartedTestContainer): string {
  const [network] = c.getNetworkNames();
  if (!network) throw new Error('container has no network');
  return c.getIpAddress(network);
}

function podman(args: string[]): string {
  return execFileSync('podman', args, { env: podmanEnv(), encoding: 'utf8' });
}

/**
 * A command in a running container, through the podman CLI: an exec session made through the
 * API (testcontainers' exec) leaves its conmon running after the container is gone.
 */
async function execIn(c: StartedTestContainer, cmd: string[]): Promise<{ output: string; exitCode: number }> {
  const r = await exec('podman', ['exec', c.getId(), ...cmd], { env: podmanEnv() });
  return { output: r.stdout + r.stderr, exitCode: r.code };
}

/** Resolves when a line matching `pattern` appears in the container's output. */
async function logLine(c: StartedTestContainer, pattern: RegExp): Promise<string> {
  const stream = await c.logs();
  return new Promise((resolve, reject) => {
    let buf = '';
    stream.on('data', (d: Buffer | string) => {
      buf += d.toString();
      const line = buf.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) {
        stream.destroy();
        resolve(line);
      }
    });
    stream.on('error', reject);
  });
}

interface StreamResult {
  status: number;
  chunks: number;
  done: boolean;
}

/** A streaming chat completion; `onFirstChunk` runs once the first chunk arrives. */
function streamChat(url: string, tokens: number, onFirstChunk: () => void): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: 'mock-gpt', stream: true, messages: [{ role: 'user', content: 'drain me' }] });
    const req = request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': String(tokens), 'x-mock-latency-ms-per-token': '100' },
    }, (res) => {
      let text = '';
      let first = true;
      res.setEncoding('utf8').on('data', (d: string) => {
        text += d;
        if (first && text.includes('data: ')) {
          first = false;
          onFirstChunk();
        }
      });
      res.on('end', () => {
        const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
        const content = events.filter((e) => e !== 'data: [DONE]' && (JSON.parse(e.slice(6)) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content);
        resolve({ status: res.statusCode ?? 0, chunks: content.length, done: events.at(-1) === 'data: [DONE]' });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.skipIf(!availability.run)('images (podman)', () => {
  let service: PodmanService;
  let mock: StartedTestContainer;
  let dir: string;

  beforeAll(async () => {
    service = await startPodmanService();
    dir = mkdtempSync(join(tmpdir(), 'tollgate-images-test-'));
    mock = await new ReadOnlyContainer(MOCK).withWaitStrategy(Wait.forLogMessage(/mock-llm listening on/)).start();
  }, 120_000);

  afterAll(async () => {
    await mock?.stop();
    // Whatever a failed start left behind.
    const left = podman(['ps', '--all', '--quiet', '--filter', `label=${RUN_LABEL}=${RUN_ID}`]).split('\n').filter(Boolean);
    if (left.length) podman(['rm', '--force', ...left]);
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  function proxyConfig(): string {
    const file = join(dir, 'tollgate.yaml');
    writeFileSync(file, `config:
  adminAddr: 127.0.0.1:15000
  drainTimeout: 30s
binds:
- port: 8080
  listeners:
  - name: main
    protocol: HTTP
    routes:
    - name: llm
      matches:
      - path: { type: PathPrefix, value: /v1 }
      backends:
      - host: ${ipOf(mock)}:8080
`);
    return file;
  }

  const startProxy = () =>
    new ReadOnlyContainer(PROXY)
      .withBindMounts([{ source: proxyConfig(), target: '/etc/tollgate/tollgate.yaml', mode: 'ro' }])
      .withCommand(['--file', '/etc/tollgate/tollgate.yaml'])
      .withWaitStrategy(Wait.forLogMessage(/serving config \w+ from \/etc\/tollgate\/tollgate.yaml/))
      .start();

  it('mock-llm serves chat completions and /healthz', async () => {
    const health = await fetch(`http://${ipOf(mock)}:8080/healthz`);
    expect(health.status).toBe(200);
    const r = await fetch(`http://${ipOf(mock)}:8080/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': '2' },
      body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'container' }] }),
    });
    expect(r.status).toBe(200);
    expect(((await r.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('container container');
  });

  it('the proxy serves its mounted configuration, as a non-root user on a read-only root filesystem', async () => {
    const proxy = await startProxy();
    try {
      expect((await fetch(`http://${ipOf(proxy)}:15021/healthz/ready`)).status).toBe(200);
      const r = await fetch(`http://${ipOf(proxy)}:8080/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': '3' },
        body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'via the proxy' }] }),
      });
      expect(r.status).toBe(200);
      expect(((await r.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('via the proxy');

      // PID 1 is Node, as the image's user (no init, no shell in between).
      const status = await execIn(proxy, ['cat', '/proc/1/status']);
      expect(status.output).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
      // (The command line, not /proc/1/comm: Node 26 names its main thread node-MainThread.)
      expect((await execIn(proxy, ['cat', '/proc/1/cmdline'])).output.split('\0').slice(0, 2)).toEqual(['node', '/app/bin/tollgate.js']);
      const write = await execIn(proxy, ['node', '-e', 'require("fs").writeFileSync("/app/x", "y")']);
      expect(write.exitCode).not.toBe(0);
      expect(write.output).toMatch(/EROFS|read-only file system/);
      expect((await execIn(proxy, ['node', '/app/bin/tollgate.js', '--version'])).output.trim()).toBe('tollgate 0.1.0');
      // Without --workers or config.workers the image serves on every CPU the container may use.
      expect(await logLine(proxy, /serving on \d+ threads? /)).toMatch(/serving on \d+ threads? \(auto: /);
    } finally {
      await proxy.stop();
    }
  });

  it('on stop (SIGTERM) the proxy refuses new connections, finishes the stream in flight and exits 0', async () => {
    const proxy = await startProxy();
    const id = proxy.getId();
    const url = `http://${ipOf(proxy)}:8080/v1/chat/completions`;
    try {
      let stopped: Promise<unknown> | undefined;
      const draining = logLine(proxy, /SIGTERM received: draining/);
      let streamEnded = false;
      const streaming = streamChat(url, 20, () => {
        stopped = proxy.stop({ remove: false, timeout: 30_000 });
      }).finally(() => (streamEnded = true));
      await draining;
      // While the stream is still in flight (the proxy draining, not gone), a new connection
      // is refused: the listener closed, the process did not.
      const refusal = await fetch(url, { method: 'POST', body: '{}' }).then(
        (r) => `answered ${r.status}`,
        (e: Error & { cause?: { code?: string } }) => e.cause?.code ?? e.message,
      );
      expect({ refusal, streamEnded }).toEqual({ refusal: 'ECONNREFUSED', streamEnded: false });
      expect(await streaming).toEqual({ status: 200, chunks: 20, done: true });
      await stopped;
      expect(podman(['inspect', '--format', '{{.State.ExitCode}}', id]).trim()).toBe('0');
    } finally {
      podman(['rm', '--force', '--ignore', id]);
    }
  });
});
