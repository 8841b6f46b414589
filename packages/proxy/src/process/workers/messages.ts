// What the main thread and a worker thread say to each other. A worker is told what to do
// with a `call` and answers each with the call's `seq`; nothing passes between them per
// request or per connection: shared state lives in shared memory (the rate limits, the
// buffered-bytes budget, the connection caps), and the kernel spreads connections.
import type { ProcessConfig, TraceEvent } from '@tollgate/api';
import type { MetricObjectWithValues, MetricValue } from 'prom-client';
import type { SharedTraceSession, ThreadFigures } from '../../server/thread-figures.js';
import type { ThreadViews, ViewName } from '../../server/thread-views.js';
import type { SharedBuffers } from './shared-state.js';
import type { LimitLayout } from '../../ratelimit/local/shared-memory.js';
import type { CoolDown } from '../../upstream/cool-downs.js';
import type { Handover } from './snapshot-handover.js';

/** What a worker thread is started with (its `workerData`). */
export interface WorkerStart {
  /** 1..N-1: the main thread is worker 0. */
  readonly index: number;
  /** N: the threads of the process, the main thread included. */
  readonly threads: number;
  readonly settings: ProcessConfig;
  /** The log directive in force when the worker starts (it may have been changed since start-up). */
  readonly logDirective: string;
  /** The memory the threads share (./shared-state.ts). */
  readonly shared: SharedBuffers;
  /** Collect garbage once quiet after each apply, as the main thread does (./memory-compaction.ts). */
  readonly compactMemory: boolean;
  /** Send each log line to the main thread ('log') instead of writing it to stdout: the process logs to a destination of its own (tests). */
  readonly forwardLogs: boolean;
}

/** The port each bind of the main thread listens on, by `address:port` as configured (port 0 binds are told theirs). */
export type BoundPorts = readonly (readonly [string, number])[];

export type WorkerCall =
  /** `handover`: the snapshot, relative to the last one the thread applied when it holds it (./snapshot-handover.ts). `limits`: the main thread's layout of the limits' shared memory, after it applied the snapshot. */
  | { readonly op: 'apply'; readonly handover: Handover; readonly ports: BoundPorts; readonly limits: LimitLayout }
  | { readonly op: 'metrics' }
  | { readonly op: 'state' }
  /** This thread's part of an admin view (server/thread-views.ts). */
  | { readonly op: 'view'; readonly name: ViewName }
  | { readonly op: 'log-level'; readonly directive: string }
  | { readonly op: 'trace-arm'; readonly session: SharedTraceSession }
  | { readonly op: 'trace-disarm'; readonly id: number }
  | { readonly op: 'drain' };

export type ToWorker =
  | { readonly kind: 'call'; readonly seq: number; readonly call: WorkerCall }
  /** A cool-down another thread recorded (not a call: nothing answers it). */
  | { readonly kind: 'cool-down'; readonly key: string; readonly coolDown: CoolDown };


export type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** What a call may answer with. */
export type WorkerAnswer = WorkerMetrics | ThreadFigures | ThreadViews[ViewName];

export type FromWorker =
  | { readonly kind: 'started' }
  /** An event of the request this thread traces for session `id`; `end` closes the session's stream. */
  | { readonly kind: 'trace'; readonly id: number; readonly event: TraceEvent }
  | { readonly kind: 'trace-end'; readonly id: number }
  /** One log line of this thread, for the process's log destination (WorkerStart.forwardLogs). */
  | { readonly kind: 'log'; readonly line: string }
  /** A cool-down this thread recorded, for the main thread to keep and pass on. */
  | { readonly kind: 'cool-down'; readonly key: string; readonly coolDown: CoolDown }
  | { readonly kind: 'answer'; readonly seq: number; readonly ok: true; readonly value?: WorkerAnswer }
  | { readonly kind: 'answer'; readonly seq: number; readonly ok: false; readonly error: string; readonly code?: string };
