// A trace session on the admin server (`GET /debug/trace[?match=]`): the stream opens, an
// opening comment says the session is armed, then the events of one request arrive, the last
// one `requestFinished`. Closing the session disconnects, which disarms it on the server.
import { compile, TraceEvent } from '@tollgate/api';
import { readSse } from '@tollgate/kit/sse';
import { adminStream, firstLine } from '../admin-client.js';
import { GwctlError } from '../errors.js';
import type { Target } from '../target/target.js';

/** A trace event is a few KiB; anything this large is not one. */
const MAX_TRACE_EVENT_BYTES = 16 * 1024 * 1024;

export interface TraceSession {
  /** Resolves with the opening comment once the session is armed. */
  readonly armed: Promise<string>;
  /** Resolves with every event once `requestFinished` arrived; rejects when the stream fails first. */
  readonly finished: Promise<TraceEvent[]>;
  /** Disconnects, which disarms the session on the server. */
  close(): void;
}

const validEvent = compile(TraceEvent);

/** An event as the TraceEvent schema defines it; anything else is the server's error, never a crash. */
function parseEvent(data: string): TraceEvent {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `the trace stream sent an event that is not JSON: ${firstLine(data)}`);
  }
  const checked = validEvent(value);
  if (!checked.ok) {
    const problem = checked.problems[0]!;
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `the trace stream sent an invalid event: ${problem.path || '(root)'}: ${problem.message}`);
  }
  return checked.value;
}

/**
 * Arms a session and calls `onEvent` for each event as it arrives, and `onComment` for each
 * comment (the opening one, then the keepalives that show the stream alive while it waits).
 */
export function openTrace(target: Target, opts: { match?: string; onEvent?: (e: TraceEvent) => void; onComment?: (text: string) => void } = {}): TraceSession {
  const path = `/debug/trace${opts.match ? `?match=${encodeURIComponent(opts.match)}` : ''}`;
  const abort = new AbortController();
  let markArmed!: (comment: string) => void;
  const armed = new Promise<string>((resolve) => (markArmed = resolve));
  const run = async (): Promise<TraceEvent[]> => {
    const res = await adminStream(target, path, abort.signal);
    try {
      const events: TraceEvent[] = [];
      for await (const item of readSse(res as AsyncIterable<Buffer>, { maxLineBytes: MAX_TRACE_EVENT_BYTES })) {
        if (item.type === 'passthrough') {
          throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `the trace stream from ${target.description} sent an event larger than ${MAX_TRACE_EVENT_BYTES} bytes`);
        }
        if (item.data === null) {
          if (item.comments.length) {
            const text = item.comments.join('\n').trim();
            markArmed(text);
            opts.onComment?.(text);
          }
          continue;
        }
        const event = parseEvent(item.data);
        // Some servers send no opening comment: the first event proves the session was armed.
        markArmed('');
        events.push(event);
        opts.onEvent?.(event);
        if (event.message.type === 'requestFinished') return events;
      }
      throw new GwctlError('TG_GWCTL_ADMIN_UNREACHABLE', `the trace stream from ${target.description} ended before the request finished (the proxy restarted or shut down?)`);
    } finally {
      res.destroy();
    }
  };
  const finished = run().catch((err: unknown) => {
    throw abort.signal.aborted ? new GwctlError('TG_GWCTL_INTERRUPTED', 'trace cancelled before the request finished') : err;
  });
  const armedOrFailed = Promise.race([armed, finished.then(() => '')]);
  // Callers may await only one of the two; neither must become an unhandled rejection.
  armedOrFailed.catch(() => undefined);
  finished.catch(() => undefined);
  return { armed: armedOrFailed, finished, close: () => abort.abort() };
}
