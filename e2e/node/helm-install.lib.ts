// Helpers of the helm install suite on the e2e node: kubectl with errors that say what failed,
// waits on conditions (kubectl wait, or a probe polled until a deadline), port-forwards through
// kubectl, and a bounded request loop that counts what failed.
import { spawn, type ChildProcess } from 'node:child_process';
import type { ClusterHandle } from '../lib/use-cluster-command.js';

export async function kubectlOk(node: ClusterHandle, args: readonly string[], input?: string): Promise<string> {
  const r = await node.kubectl(args, input === undefined ? {} : { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
}

/** Polls `probe` until it returns a value (not undefined) or the deadline passes; `what` names it in the error. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs / 1000} s${last ? ` (last error: ${String((last as Error).message ?? last)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The seconds each named step of a test took: printed with its figures, and added to the error of a step that fails. */
export class StepClock {
  readonly #done: string[] = [];

  async run<T>(name: string, step: () => Promise<T>): Promise<T> {
    const t0 = Date.now();
    try {
      const v = await step();
      this.#done.push(`${name} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      return v;
    } catch (err) {
      const e = err as Error;
      e.message = `${name} failed after ${((Date.now() - t0) / 1000).toFixed(1)} s (${this.#done.join(', ') || 'first step'} before it): ${e.message}`;
      throw e;
    }
  }

  toString(): string {
    return this.#done.join(', ');
  }
}

export interface Forward {
  readonly port: number;
  close(): void;
}

/** `kubectl port-forward <target> :<port>`: resolves once kubectl listens, with the local port. */
export async function portForward(node: ClusterHandle, namespace: string, target: string, port: number): Promise<Forward> {
  const pf: ChildProcess = spawn(node.tools.kubectl, ['port-forward', '-n', namespace, target, `:${port}`], { env: node.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const local = await new Promise<number>((resolve, reject) => {
    let out = '';
    pf.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    pf.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
    pf.once('exit', (code) => reject(new Error(`kubectl port-forward ${target} exited ${code}: ${out}`)));
  });
  return { port: local, close: () => pf.kill() };
}

export interface LoadResult {
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  /** The first few failures, for the report. */
  readonly failures: readonly string[];
  /** Failures whose connection was refused: no proxy accepted them (a removed pod's address). */
  readonly refused: number;
}

/**
 * `workers` loops sending a chat completion each, one after another, until `stop` resolves or
 * `max` requests were sent (bounded either way). A failure is anything but a 200 with a
 * completion: a refused or reset connection, a 5xx, a timeout.
 */
export async function loadLoop(url: string, stop: Promise<unknown>, opts: { workers?: number; max?: number; headers?: Record<string, string> } = {}): Promise<LoadResult> {
  let stopped = false;
  void stop.then(() => (stopped = true), () => (stopped = true));
  const max = opts.max ?? 20_000;
  let sent = 0;
  let ok = 0;
  const failures: string[] = [];
  let refused = 0;
  const worker = async () => {
    while (!stopped && sent < max) {
      sent++;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': '2', ...opts.headers },
          body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'load' }] }),
          signal: AbortSignal.timeout(10_000),
        });
        const body = await res.text();
        if (res.status === 200 && body.includes('"choices"')) ok++;
        else failures.push(`HTTP ${res.status}: ${body.slice(0, 200)}`);
      } catch (err) {
        const e = err as Error & { cause?: { code?: string; message?: string } };
        if (e.cause?.code === 'ECONNREFUSED') refused++;
        failures.push(`${e.name}: ${e.cause?.code ?? e.cause?.message ?? e.message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.workers ?? 2 }, worker));
  return { sent, ok, failed: failures.length, failures: failures.slice(0, 10), refused };
}
