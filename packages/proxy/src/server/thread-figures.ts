// What one serving thread reports of itself (GET /workers): the main thread for itself, each
// worker thread when the main thread asks it.
import { requestsStarted } from './data-plane.js';
import type { ProxyRuntime } from './runtime.js';
import type { TraceSink } from '../trace/session.js';
import type { ThreadViews, ViewName, ViewParts } from './thread-views.js';

export interface ThreadFigures {
  readonly requestsStarted: number;
  readonly inFlight: number;
  readonly configVersion: string | null;
  /** The serving config's routes, and how many of them its apply compiled: the others were reused from the config before (the same route objects). */
  readonly routes: number;
  readonly routesCompiled: number;
  readonly heapUsedBytes: number;
  /** CPU time this thread has used since it started (µs). */
  readonly cpuUserUs: number;
  readonly cpuSystemUs: number;
  readonly logDirective: string;
}

export function threadFigures(runtime: ProxyRuntime, logDirective: string): ThreadFigures {
  return {
    requestsStarted: requestsStarted(),
    inFlight: runtime.inflight.size,
    configVersion: runtime.hasConfig ? runtime.current.ir.version : null,
    routes: runtime.hasConfig ? runtime.current.parts.size : 0,
    routesCompiled: runtime.hasConfig ? runtime.current.routesCompiled : 0,
    heapUsedBytes: process.memoryUsage().heapUsed,
    ...threadCpu(),
    logDirective,
  };
}

/** A thread of the process as GET /workers lists it; worker 0 is the main thread. */
export interface ThreadReport {
  readonly worker: number;
  readonly state: 'starting' | 'serving' | 'restarting' | 'stopped';
  readonly restarts: number;
  readonly lastExit: string | null;
  /** null: the thread is not serving, or did not answer in time. */
  readonly figures: ThreadFigures | null;
}

/** A trace session armed on every thread: its id, its filter, and the word whose first taker streams it. */
export interface SharedTraceSession {
  readonly id: number;
  readonly match: string | null;
  /** The word of the session's SharedClaim (../trace/shared-claim.ts). */
  readonly claim: SharedArrayBuffer;
}

/** The threads besides the main one, as the admin API reads and controls them. */
export interface WorkerThreads {
  /** Threads besides the main one (config.workers - 1), whatever their state. */
  readonly threads: number;
  figures(): Promise<ThreadReport[]>;
  /** Each serving worker's part of view `name` (./thread-views.ts); one that does not answer within a short deadline is listed as missing. */
  view<K extends ViewName>(name: K): Promise<ViewParts<ThreadViews[K]>>;
  /** A CPU profile of one worker thread (V8's .cpuprofile JSON) over `ms`, or ended early by `signal`; null: no such thread serving. */
  cpuProfile(worker: number, ms: number, signal: AbortSignal): Promise<string | null>;
  /** A heap snapshot of one worker thread (V8's .heapsnapshot JSON, streamed); null: no such thread serving. */
  heapSnapshot(worker: number): Promise<NodeJS.ReadableStream | null>;
  setLogDirective(directive: string): void;
  /** Arms the session on every serving thread; resolves once each has it (a request any of them takes next can be the one). */
  armTrace(session: SharedTraceSession, sink: TraceSink): Promise<void>;
  /** The session ended (streamed, or its client left): every thread forgets it. */
  disarmTrace(id: number): void;
}

function threadCpu(): { cpuUserUs: number; cpuSystemUs: number } {
  const { user, system } = process.threadCpuUsage();
  return { cpuUserUs: user, cpuSystemUs: system };
}
