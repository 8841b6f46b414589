// One trace, whatever shows it: plan (watch or inject mode), arm the session, send the
// request in inject mode, wait for the stream to finish. The terminal UI and the JSON Lines
// output both drive it through hooks; it knows neither.
import { randomUUID } from 'node:crypto';
import type { TraceEvent } from '@tollgate/api';
import { parseCurlArgs, type InjectRequest } from '../curl-args.js';
import { GwctlError, describe, usage } from '../errors.js';
import type { Target } from '../target/target.js';
import { matchFor, sendInject, type InjectResponse } from './inject.js';
import { openTrace } from './session.js';

export interface TracePlan {
  readonly inject: { readonly port: number; readonly request: InjectRequest } | null;
}

export async function planTrace(flags: { port?: number }, curlArgs: readonly string[] | undefined): Promise<TracePlan> {
  if (flags.port === undefined && curlArgs !== undefined) throw usage('inject mode needs --port <listener_port> before --');
  if (flags.port !== undefined && curlArgs === undefined) throw usage('--port needs a request after it: --port <listener_port> -- <url> [curl args]');
  if (flags.port === undefined || curlArgs === undefined) return { inject: null };
  return { inject: { port: flags.port, request: await parseCurlArgs(curlArgs) } };
}

function waitingText(target: Target, plan: TracePlan): string {
  return plan.inject
    ? `Trace armed on ${target.description}; sending ${plan.inject.request.method} ${plan.inject.request.url.href} to listener port ${plan.inject.port}…`
    : `Trace armed on ${target.description}; waiting for the next request from any client…`;
}

export interface TraceHooks {
  readonly onEvent: (e: TraceEvent) => void;
  /** Called with a status line once the session is armed, before an inject-mode request is sent. */
  readonly onArmed: (text: string) => void | Promise<void>;
  /** Aborting cancels the trace: the session disarms, the request (if any) is abandoned. */
  readonly signal: AbortSignal;
  /** Each comment of the stream: the opening one, then keepalives while the session waits. */
  readonly onComment?: (text: string) => void;
}

/** Runs one trace; resolves with the inject-mode response (undefined in watch mode). */
export async function drive(target: Target, plan: TracePlan, hooks: TraceHooks): Promise<InjectResponse | undefined> {
  const id = randomUUID();
  const session = openTrace(target, { match: plan.inject ? matchFor(id) : undefined, onEvent: hooks.onEvent, onComment: hooks.onComment });
  const close = () => session.close();
  hooks.signal.addEventListener('abort', close);
  try {
    await session.armed;
    await hooks.onArmed(waitingText(target, plan));
    let response: InjectResponse | undefined;
    if (plan.inject) {
      try {
        response = await sendInject(target, plan.inject.port, plan.inject.request, id, hooks.signal);
      } catch (err) {
        if (hooks.signal.aborted) throw new GwctlError('TG_GWCTL_INTERRUPTED', 'cancelled');
        throw err instanceof GwctlError ? err : new GwctlError('TG_GWCTL_REQUEST_FAILED', describe(err), { cause: err });
      }
    }
    await session.finished;
    return response;
  } finally {
    hooks.signal.removeEventListener('abort', close);
    session.close();
  }
}
