// A test's child process (a real service the test starts): its output kept for failure
// messages, readiness awaited by probing (never by sleeping), stopped after the suite and, as a
// backstop, when the test process exits.
import type { ChildProcess } from 'node:child_process';

const START_TIMEOUT_MS = 20_000;

/** A child process with its output kept for failure messages. */
export class Proc {
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;
  #exitCode: number | null | undefined;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    const keep = (b: Buffer): void => {
      this.output.push(b.toString('utf8'));
      if (this.output.length > 400) this.output.splice(0, this.output.length - 400);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code) => {
        this.#exitCode = code;
        resolve(code);
      });
      child.once('error', (err) => {
        this.output.push(String(err));
        this.#exitCode = null;
        resolve(null);
      });
    });
    LIVE.add(this);
  }

  get running(): boolean {
    return this.#exitCode === undefined;
  }

  tail(): string {
    return this.output.join('').split('\n').slice(-40).join('\n');
  }

  /** SIGTERM, then SIGKILL if it has not exited within 5s; resolves once it has exited. */
  async stop(): Promise<void> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(timer);
    }
    LIVE.delete(this);
  }
}

// Backstop: a test process that dies without running afterAll still takes its children along.
const LIVE = new Set<Proc>();
process.once('exit', () => {
  for (const p of LIVE) if (p.running) p.child.kill('SIGKILL');
});

/** `waitReady`, and on failure the process is stopped (so a start tried again leaves nothing behind). */
export async function readyOrStopped(proc: Proc, procs: Proc[], what: string, probe: () => Promise<boolean>): Promise<void> {
  procs.push(proc);
  try {
    await waitReady(proc, what, probe);
  } catch (err) {
    await proc.stop();
    procs.splice(procs.indexOf(proc), 1);
    throw err;
  }
}

/** Resolves when `probe` succeeds; rejects when the process exits or START_TIMEOUT_MS passes. */
export async function waitReady(proc: Proc, what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (!proc.running) throw new Error(`${proc.name} exited before ${what}:\n${proc.tail()}`);
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`${proc.name}: no ${what} within ${START_TIMEOUT_MS}ms:\n${proc.tail()}`);
    // Between two probes: wait for either the process to exit or 50ms to pass.
    await Promise.race([proc.exited, new Promise((r) => setTimeout(r, 50))]);
  }
}
