// Runs the trace UI with Ink on the real terminal: the trace (trace/run.ts) feeds the store,
// the UI exits on q or Ctrl-C (which cancels the trace), and the inject-mode response is
// printed (curl-like) afterwards.
import { createElement } from 'react';
import { render } from 'ink';
import { EXIT, describe, type GwctlError } from '../errors.js';
import type { Io } from '../io.js';
import type { Target } from '../target/target.js';
import { renderResponse, type InjectResponse } from '../trace/inject.js';
import { drive, type TracePlan } from '../trace/run.js';
import { TraceStore } from './store.js';
import { TraceApp, type ExitReason } from './trace-app.js';

export async function runTraceUi(target: Target, plan: TracePlan, io: Io, title: string): Promise<number> {
  const store = new TraceStore({ status: `Arming the trace on ${target.description}…` });
  let reason: ExitReason | undefined;
  const instance = render(createElement(TraceApp, { store, title, onExit: (r: ExitReason) => (reason = r) }), {
    stdout: io.stdout as NodeJS.WriteStream,
    stdin: io.stdin as NodeJS.ReadStream,
    stderr: io.stderr as NodeJS.WriteStream,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  const abort = new AbortController();
  let failure: unknown;
  let response: InjectResponse | undefined;
  const work = drive(target, plan, {
    onEvent: (e) => store.push(e),
    onArmed: (text) => store.update({ phase: 'waiting', status: text }),
    signal: abort.signal,
  }).then(
    (res) => {
      response = res;
      const n = store.get().events.length;
      store.update({
        phase: 'done',
        status: `Traced ${n} events${res ? `; response ${res.status} ${res.statusMessage}` : ''}`,
      });
    },
    (err: unknown) => {
      if (reason) return;
      failure = err;
      instance.unmount();
    },
  );
  await instance.waitUntilExit();
  abort.abort();
  await work;
  if (failure) throw failure as GwctlError;
  if (reason === 'interrupt') {
    io.stderr.write('gwctl: interrupted\n');
    return EXIT.INTERRUPTED;
  }
  if (response && plan.inject) {
    try {
      io.stdout.write(renderResponse(response, plan.inject.request.include));
    } catch (err) {
      io.stderr.write(`gwctl: cannot print the response: ${describe(err)}\n`);
    }
  }
  return EXIT.OK;
}
