// A worker thread: one more runtime serving the same binds as the main thread, on sockets of
// its own (SO_REUSEPORT). It has no admin server, no metrics or readiness server and no config
// source: the main thread applies each snapshot first, then hands it here (WorkerPool), and
// asks for this thread's metrics to merge them into the one /metrics of the process.
import { parentPort, workerData } from 'node:worker_threads';
import { DEFAULT_LIMITS } from '@tollgate/api';
import { TollgateError } from '../../errors.js';
import { LogControl } from '../../log/logger.js';
import { ProxyRuntime } from '../../server/runtime.js';
import { threadFigures, type SharedTraceSession } from '../../server/thread-figures.js';
import { threadView } from '../../server/thread-views.js';
import type { TraceSession } from '../../trace/session.js';
import { SharedClaim } from '../../trace/shared-claim.js';
import { runtimeOptions } from '../runtime-options.js';
import { MemoryCompaction } from '../memory-compaction.js';
import { SharedState } from './shared-state.js';
import { HandoverReceiver } from './snapshot-handover.js';
import { requestsStarted } from '../../server/data-plane.js';
import type { FromWorker, ToWorker, WorkerAnswer, WorkerCall, WorkerStart } from './messages.js';

const start = workerData as WorkerStart;
const port = parentPort!;
// Lines go to stdout, as the main thread's do, unless the process logs somewhere of its own.
const forwarded = start.forwardLogs ? { write: (line: string) => port.postMessage({ kind: 'log', line } satisfies FromWorker) } : undefined;
const logs = new LogControl(start.logDirective, forwarded, { worker: start.index });
let ports = new Map<string, number>();
/** Applies run one after another, in the order they were sent (a restarted thread's first one may meet the next). */
let applying: Promise<void> = Promise.resolve();
const handovers = new HandoverReceiver();
const runtime = new ProxyRuntime({
  ...runtimeOptions(start.settings, logs),
  ...SharedState.join(start.shared, start.index, start.threads).parts,
  bindSharing: { port: (address, configured) => ports.get(`${address}:${configured}`) ?? configured, probe: false },
  processMetrics: false,
});

const compaction = start.compactMemory ? new MemoryCompaction({ requests: () => ({ started: requestsStarted(), inFlight: runtime.inflight.size }), log: logs.get('proxy') }) : null;

/** The trace sessions the main thread armed here, by its session id. */
const traced = new Map<number, TraceSession>();

async function armTrace(s: SharedTraceSession): Promise<void> {
  let filter = null;
  if (s.match !== null) {
    const { compileTraceFilter } = await import('../../trace/filter.js');
    filter = compileTraceFilter(s.match, runtime.hasConfig ? (runtime.current.ir.limits ?? DEFAULT_LIMITS) : DEFAULT_LIMITS);
  }
  const session = runtime.traces.arm(
    filter,
    s.match,
    {
      send: (event) => port.postMessage({ kind: 'trace', id: s.id, event } satisfies FromWorker),
      end: () => port.postMessage({ kind: 'trace-end', id: s.id } satisfies FromWorker),
    },
    new SharedClaim(s.claim, start.index),
    s.id,
  );
  traced.set(s.id, session);
}

async function perform(call: WorkerCall): Promise<WorkerAnswer | undefined> {
  switch (call.op) {
    case 'apply': {
      const done = applying.then(async () => {
        const { snapshot, applied } = handovers.open(call.handover);
        ports = new Map(call.ports);
        runtime.limiters.adopt(call.limits);
        await runtime.apply(snapshot);
        applied();
        compaction?.schedule();
      });
      applying = done.catch(() => undefined);
      await done;
      return undefined;
    }
    case 'metrics':
      return (await runtime.metrics.registry.getMetricsAsJSON());
    case 'state':
      return threadFigures(runtime, logs.directive);
    case 'view':
      return threadView(runtime, call.name);
    case 'trace-arm':
      await armTrace(call.session);
      return undefined;
    case 'trace-disarm': {
      const session = traced.get(call.id);
      traced.delete(call.id);
      if (session) runtime.traces.disarm(session);
      return undefined;
    }
    case 'log-level':
      logs.set(call.directive);
      return undefined;
    case 'drain':
      compaction?.stop();
      await runtime.close();
      logs.flush();
      return undefined;
  }
}

// Cool-downs are the process's: this thread's go to the main thread, the others' come back.
runtime.coolDowns.onRecorded = (key, coolDown) => port.postMessage({ kind: 'cool-down', key, coolDown } satisfies FromWorker);

port.on('message', (message: ToWorker) => {
  if (message.kind === 'cool-down') {
    runtime.coolDowns.adopt(message.key, message.coolDown);
    return;
  }
  perform(message.call).then(
    (value) => port.postMessage({ kind: 'answer', seq: message.seq, ok: true, value } satisfies FromWorker),
    (err: unknown) => port.postMessage({ kind: 'answer', seq: message.seq, ok: false, error: err instanceof Error ? err.message : String(err), code: err instanceof TollgateError ? err.code : undefined } satisfies FromWorker),
  );
});
port.postMessage({ kind: 'started' } satisfies FromWorker);
