// The worker threads of a process serving on N threads (config.workers): the main thread is
// worker 0 and owns everything a pod has once (the config source, the admin API, /metrics,
// readiness); this pool starts threads 1..N-1, hands each the snapshot the main thread has
// applied, gathers their metrics and restarts one that dies.
//
// A snapshot goes to the workers only after the main thread applied it: the main thread is
// where a bad config is refused (compile, ports), so a worker is never the first to meet one.
// A worker that cannot apply what the main thread did (a port taken between the two) is
// restarted, and starts again from the latest snapshot, as a worker that died does.
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ProcessConfig, ProxySnapshot } from '@tollgate/api';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { SharedTraceSession, ThreadFigures, ThreadReport, WorkerThreads } from '../../server/thread-figures.js';
import type { ThreadViews, ViewName, ViewParts } from '../../server/thread-views.js';
import type { TraceSink } from '../../trace/session.js';
import type { CoolDown } from '../../upstream/cool-downs.js';
import { HandoverSender, type Outgoing } from './snapshot-handover.js';
import type { SharedBuffers } from './shared-state.js';
import type { LimitLayout } from '../../ratelimit/local/shared-memory.js';
import type { BoundPorts, FromWorker, ToWorker, WorkerCall, WorkerMetrics, WorkerStart } from './messages.js';

// Worker threads run the built JavaScript: Node cannot run this package's TypeScript sources
// in a thread (tests run the main thread from the sources and the workers from dist/).
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? '../../../dist/process/workers/worker-thread.js' : './worker-thread.js', import.meta.url);

/** Time a worker has to start and answer a call before it is taken for stuck. */
const CALL_TIMEOUT_MS = 30_000;
/** Time a worker has to give its figures or metrics: a scrape or GET /workers does not wait longer for one thread. */
const READ_TIMEOUT_MS = 5_000;
/** Time a worker has to give its part of an admin view (/config_dump, /budgets, ...): the view comes without it after. */
export const VIEW_TIMEOUT_MS = 2_000;
/** The first restart of a worker that died waits this long, each further one in a row twice as long... */
const RESTART_DELAY_MS = 100;
/** ...up to this. */
const MAX_RESTART_DELAY_MS = 30_000;

type ThreadState = ThreadReport['state'];

interface Thread {
  readonly index: number;
  worker: Worker | null;
  state: ThreadState;
  restarts: number;
  /** Restarts since the thread last applied a snapshot: the backoff of a thread that keeps dying. */
  failuresInARow: number;
  lastExit: string | null;
  /** The config hand-over the thread applied last (null: none since it started): the next one may be relative to it. */
  handed: number | null;
  timer: NodeJS.Timeout | null;
  readonly pending: Map<number, { resolve(value: unknown): void; reject(err: Error): void; timer: NodeJS.Timeout }>;
}

export interface WorkerPoolOptions {
  /** Threads besides the main thread. */
  readonly threads: number;
  readonly settings: ProcessConfig;
  readonly shared: SharedBuffers;
  /** The log directive in force (a restarted worker starts with the one in force then). */
  readonly logDirective: () => string;
  readonly log: Logger;
  /** The main thread's registry: the pool's own series go there. */
  readonly registry: Registry;
  /** Each worker collects garbage once quiet after an apply (what ProxyProcessOptions.compactMemory asks of the main thread). */
  readonly compactMemory?: boolean;
  /** A cool-down a worker recorded: the main thread keeps it (the pool passes it on to the other workers). */
  readonly coolDown?: (key: string, coolDown: CoolDown) => void;
  /** Where the workers' log lines go when the process logs to a destination of its own (absent: each worker writes to stdout). */
  readonly logLine?: (line: string) => void;
  /** A worker is gone: what it held of the shared state (reservations, buffered bytes, connections) is released. */
  readonly released?: (index: number) => void;
  /** Overrides the worker script (tests). */
  readonly script?: URL;
  /** Overrides VIEW_TIMEOUT_MS (tests). */
  readonly viewTimeoutMs?: number;
}

export type WorkerView = Omit<ThreadReport, 'figures'>;

/** Emits 'restarted' (worker index) when a thread that died serves again. */
export class WorkerPool extends EventEmitter<{ restarted: [number] }> implements WorkerThreads {
  readonly #threads: Thread[];
  readonly #options: WorkerPoolOptions;
  readonly #script: URL;
  #seq = 0;
  #latest: { readonly snapshot: ProxySnapshot; readonly handover: Outgoing; readonly ports: BoundPorts; readonly limits: LimitLayout } | null = null;
  readonly #handovers = new HandoverSender();
  #closing = false;
  #applied = false;
  /** Where the events of each shared trace session go (the main thread's stream to its client). */
  readonly #traceSinks = new Map<number, TraceSink>();
  readonly #restarts: Counter;

  constructor(options: WorkerPoolOptions) {
    super();
    this.#options = options;
    this.#script = options.script ?? WORKER_URL;
    this.#threads = Array.from({ length: options.threads }, (_, i) => ({ index: i + 1, worker: null, state: 'starting', restarts: 0, failuresInARow: 0, lastExit: null, handed: null, timer: null, pending: new Map() }));
    this.#restarts = new Counter({ name: 'tollgate_worker_restarts_total', help: 'Worker threads restarted after they died or could not apply a config the main thread applied.', registers: [options.registry] });
    const threads = this.#threads;
    new Gauge({
      name: 'tollgate_workers',
      help: 'Threads serving requests now, the main thread included (config.workers when none is restarting).',
      registers: [options.registry],
      collect() {
        this.set(1 + threads.filter((t) => t.state === 'serving').length);
      },
    });
  }

  /** Starts every thread; rejects (stopping those started) when one does not start. */
  async start(): Promise<void> {
    if (!existsSync(this.#script)) {
      throw new Error(`worker threads run the built proxy, and ${fileURLToPath(this.#script)} does not exist: run "pnpm build" (or serve with workers: 1)`);
    }
    try {
      await Promise.all(this.#threads.map((t) => this.#spawn(t)));
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** Hands the main thread's snapshot to every thread; resolves once each applied it or was restarted to. */
  async apply(snapshot: ProxySnapshot, ports: BoundPorts, limits: LimitLayout): Promise<void> {
    this.#latest = { snapshot, handover: this.#handovers.next(snapshot), ports, limits };
    await Promise.all(this.#threads.map((t) => this.#applyTo(t)));
    this.#applied = true;
  }

  /** Some snapshot went to every thread (readiness waits for it: the first config serves on all threads at once). */
  get applied(): boolean {
    return this.#applied;
  }

  /** Every serving thread's metrics (a thread that does not answer in time is left out of this scrape). */
  async metrics(): Promise<WorkerMetrics[]> {
    const answers = await Promise.all(this.#serving().map((t) => this.#call<WorkerMetrics>(t, { op: 'metrics' }, READ_TIMEOUT_MS).catch(() => null)));
    return answers.filter((a) => a !== null);
  }

  /** What each thread reports of itself, for GET /workers. */
  async figures(): Promise<ThreadReport[]> {
    return Promise.all(
      this.#threads.map(async (t) => ({
        ...this.#view(t),
        figures: t.state === 'serving' ? await this.#call<ThreadFigures>(t, { op: 'state' }, READ_TIMEOUT_MS).catch(() => null) : null,
      })),
    );
  }

  async view<K extends ViewName>(name: K): Promise<ViewParts<ThreadViews[K]>> {
    const answers = await Promise.all(
      this.#serving().map((t) =>
        this.#call<ThreadViews[K]>(t, { op: 'view', name }, this.#options.viewTimeoutMs ?? VIEW_TIMEOUT_MS).then(
          (value) => ({ worker: t.index, value }),
          (err: Error) => ({ worker: t.index, reason: err.message }),
        ),
      ),
    );
    return { parts: answers.filter((a) => 'value' in a), missing: answers.filter((a) => 'reason' in a) };
  }

  async armTrace(session: SharedTraceSession, sink: TraceSink): Promise<void> {
    this.#traceSinks.set(session.id, sink);
    await Promise.all(this.#serving().map((t) => this.#call(t, { op: 'trace-arm', session }).catch((err: Error) => this.#options.log.warn({ worker: t.index, err: err.message }, `worker ${t.index} could not arm trace session ${session.id}: ${err.message}`))));
  }

  disarmTrace(id: number): void {
    this.#traceSinks.delete(id);
    for (const t of this.#serving()) void this.#call(t, { op: 'trace-disarm', id }).catch(() => undefined);
  }

  /** Hands a cool-down one thread recorded to every other serving thread (`from`: the thread that recorded it; 0 the main one). */
  relayCoolDown(key: string, coolDown: CoolDown, from: number): void {
    for (const t of this.#serving()) if (t.index !== from) t.worker!.postMessage({ kind: 'cool-down', key, coolDown } satisfies ToWorker);
  }

  /** A new log directive (POST /logging): every thread's loggers follow it. */
  setLogDirective(directive: string): void {
    for (const t of this.#serving()) void this.#call(t, { op: 'log-level', directive }).catch(() => undefined);
  }

  get threads(): number {
    return this.#threads.length;
  }

  get views(): WorkerView[] {
    return this.#threads.map((t) => this.#view(t));
  }

  /** Drains every thread (each closes its binds and lets its requests finish), then stops it. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.allSettled(
      this.#threads.map(async (t) => {
        if (t.timer) clearTimeout(t.timer);
        const worker = t.worker;
        if (!worker) return;
        try {
          if (t.state === 'serving' || t.state === 'starting') await this.#call(t, { op: 'drain' }, null);
        } finally {
          t.state = 'stopped';
          await worker.terminate();
        }
      }),
    );
  }

  async cpuProfile(index: number, ms: number, signal: AbortSignal): Promise<string | null> {
    const worker = this.#servingWorker(index);
    if (!worker) return null;
    const profile = await worker.startCpuProfile();
    if (!signal.aborted) await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
    // Node gives the profile as its JSON text.
    const taken: unknown = await profile.stop();
    return typeof taken === 'string' ? taken : JSON.stringify(taken);
  }

  async heapSnapshot(index: number): Promise<NodeJS.ReadableStream | null> {
    return (await this.#servingWorker(index)?.getHeapSnapshot()) ?? null;
  }

  #servingWorker(index: number): Worker | null {
    const t = this.#threads.find((x) => x.index === index);
    return t && t.state === 'serving' ? t.worker : null;
  }

  /** Ends a thread the way a crash would (tests): it is restarted like any thread that dies. */
  async kill(index: number): Promise<void> {
    await this.#threads.find((t) => t.index === index)?.worker?.terminate();
  }

  #view(t: Thread): WorkerView {
    return { worker: t.index, state: t.state, restarts: t.restarts, lastExit: t.lastExit };
  }

  #serving(): Thread[] {
    return this.#threads.filter((t) => t.state === 'serving' && t.worker);
  }

  /** Starts the thread's worker; resolves once it said it started (and applied the latest snapshot, if any). */
  async #spawn(t: Thread): Promise<void> {
    t.state = 'starting';
    t.handed = null;
    const start: WorkerStart = { index: t.index, threads: this.#threads.length + 1, settings: this.#options.settings, shared: this.#options.shared, logDirective: this.#options.logDirective(), compactMemory: this.#options.compactMemory ?? false, forwardLogs: this.#options.logLine !== undefined };
    const worker = new Worker(this.#script, { workerData: start, name: `tollgate-worker-${t.index}` });
    t.worker = worker;
    const started = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${t.index} did not start within ${CALL_TIMEOUT_MS / 1000}s`)), CALL_TIMEOUT_MS);
      worker.on('message', (m: FromWorker) => {
        if (m.kind !== 'started') return this.#onMessage(t, m);
        clearTimeout(timer);
        resolve();
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker ${t.index} exited with code ${code} while starting`));
      });
    });
    worker.on('error', (err: Error) => {
      t.lastExit = err.message;
      this.#options.log.error({ worker: t.index, err }, `worker ${t.index} failed: ${err.message}`);
    });
    worker.on('exit', (code) => this.#exited(t, worker, code));
    await started;
    if (this.#latest) await this.#applyTo(t);
    else t.state = 'serving';
    if (t.restarts > 0 && t.state === 'serving') this.emit('restarted', t.index);
  }

  /** What a started worker says: an answer to a call, a trace session's event, a cool-down it recorded, a log line. */
  #onMessage(t: Thread, m: Exclude<FromWorker, { kind: 'started' }>): void {
    switch (m.kind) {
      case 'log':
        this.#options.logLine?.(m.line);
        return;
      case 'trace':
        this.#traceSinks.get(m.id)?.send(m.event);
        return;
      case 'trace-end':
        this.#traceSinks.get(m.id)?.end();
        return;
      case 'cool-down':
        this.#options.coolDown?.(m.key, m.coolDown);
        this.relayCoolDown(m.key, m.coolDown, t.index);
        return;
      case 'answer': {
        const p = t.pending.get(m.seq);
        if (!p) return;
        t.pending.delete(m.seq);
        clearTimeout(p.timer);
        if (m.ok) p.resolve(m.value);
        else p.reject(Object.assign(new Error(m.error), { code: m.code }));
      }
    }
  }

  async #applyTo(t: Thread): Promise<void> {
    const latest = this.#latest;
    if (!latest || !t.worker || (t.state !== 'serving' && t.state !== 'starting')) return;
    try {
      const h = latest.handover;
      // A thread that holds the previous hand-over gets this one relative to it, the others whole.
      const handover = t.handed !== null && t.handed === h.relative.base ? h.relative : h.whole();
      await this.#call(t, { op: 'apply', handover, ports: latest.ports, limits: latest.limits });
      t.handed = h.seq;
      t.state = 'serving';
      t.failuresInARow = 0;
    } catch (err) {
      if (this.#closing || !t.worker) return;
      this.#options.log.error({ worker: t.index, version: latest.snapshot.version, err: (err as Error).message }, `worker ${t.index} could not apply config version ${latest.snapshot.version}, which the main thread applied: ${(err as Error).message}; restarting it`);
      t.lastExit = `apply failed: ${(err as Error).message}`;
      // The exit handler restarts it with the latest snapshot.
      await t.worker.terminate();
    }
  }

  #exited(t: Thread, worker: Worker, code: number): void {
    if (t.worker !== worker) return;
    t.worker = null;
    for (const p of t.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`worker ${t.index} exited (code ${code})`));
    }
    t.pending.clear();
    this.#options.released?.(t.index);
    if (this.#closing || t.state === 'stopped') {
      t.state = 'stopped';
      return;
    }
    t.state = 'restarting';
    t.restarts++;
    t.failuresInARow++;
    t.lastExit ??= `exit code ${code}`;
    this.#restarts.inc();
    const delay = Math.min(MAX_RESTART_DELAY_MS, RESTART_DELAY_MS * 2 ** (t.failuresInARow - 1));
    this.#options.log.error({ worker: t.index, code, restarts: t.restarts, delayMs: delay }, `worker ${t.index} exited (code ${code}, ${t.lastExit}); restarting it in ${delay} ms, the other threads serve meanwhile`);
    t.timer = setTimeout(() => {
      t.timer = null;
      t.lastExit = null;
      this.#spawn(t).catch((err: Error) => {
        this.#options.log.error({ worker: t.index, err: err.message }, `worker ${t.index} could not be restarted: ${err.message}`);
        void t.worker?.terminate();
      });
    }, delay);
  }

  /** `timeoutMs` null: no time limit (a drain is bounded by config.drainTimeout in the worker). */
  #call<T>(t: Thread, call: WorkerCall, timeoutMs: number | null = CALL_TIMEOUT_MS): Promise<T> {
    const worker = t.worker;
    if (!worker) return Promise.reject(new Error(`worker ${t.index} is not running`));
    const seq = ++this.#seq;
    return new Promise<T>((resolve, reject) => {
      const timer = timeoutMs === null ? (undefined as unknown as NodeJS.Timeout) : setTimeout(() => {
        t.pending.delete(seq);
        reject(new Error(`worker ${t.index} did not answer ${call.op} within ${timeoutMs / 1000}s`));
      }, timeoutMs);
      t.pending.set(seq, { resolve: resolve, reject, timer });
      worker.postMessage({ kind: 'call', seq, call } satisfies ToWorker);
    });
  }
}
