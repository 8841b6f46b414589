// `gwctl trace`: arm a trace session on the admin server and show the next request's events,
// in the terminal UI or as JSON Lines (--raw). Inject mode (--port <p> -- <url> [curl args])
// arms the session with a CEL match on a header carrying a fresh UUID, waits until the
// session is armed, then sends the request itself, so no other client's request is captured.
// The trace itself is trace/run.ts; this file picks the output.
import { usage } from '../errors.js';
import { write, type Io } from '../io.js';
import { gatewayTarget, withTarget, type TargetFlags } from '../target/resolve.js';
import type { Target } from '../target/target.js';
import { renderResponse } from '../trace/inject.js';
import { drive, planTrace, type TracePlan } from '../trace/run.js';

export interface TraceFlags extends TargetFlags {
  raw?: boolean;
  port?: number;
}

async function rawTrace(target: Target, plan: TracePlan, io: Io): Promise<void> {
  const response = await drive(target, plan, {
    onEvent: (e) => write(io.stdout, JSON.stringify(e)),
    onArmed: (text) => {
      if (io.stderr.isTTY) write(io.stderr, `gwctl: ${text}`);
    },
    signal: new AbortController().signal,
  });
  // stdout carries only events; the response goes to stderr.
  if (response && plan.inject) io.stderr.write(renderResponse(response, plan.inject.request.include));
}

export async function trace(ref: string | undefined, flags: TraceFlags, curlArgs: readonly string[] | undefined, io: Io): Promise<number> {
  const plan = await planTrace(flags, curlArgs);
  if (!flags.raw && !(io.stdin.isTTY && io.stdout.isTTY)) {
    throw usage('the trace terminal UI needs a terminal on stdin and stdout; use --raw for JSON Lines');
  }
  return withTarget(gatewayTarget(ref, flags, io), async (target) => {
    if (flags.raw) {
      await rawTrace(target, plan, io);
      return 0;
    }
    // Both ends are terminals, so the UI is interactive even where CI is set: ink reads CI when
    // it loads and would otherwise draw only the last frame.
    delete process.env.CI;
    delete process.env.CONTINUOUS_INTEGRATION;
    const { runTraceUi } = await import('../tui/run.js');
    return runTraceUi(target, plan, io, ref ?? target.description);
  });
}
