// The Envoy external processor the extProc tests talk to: the `ext-proc` binary
// scripts/install-test-tools.sh builds from e2e/tools/ext-proc (go-control-plane's official
// types at e2e/tools.json's goControlPlane), started on a free loopback port, ready once it
// printed the address it serves, stopped after the suite.
import { spawn } from 'node:child_process';
import { Proc, waitReady } from './process.js';
import { toolAvailability, wrapperToolBinary } from './tool-cache.js';

export function extProcBinary(): string {
  return process.env.TOLLGATE_EXT_PROC ?? wrapperToolBinary('ext-proc', 'goControlPlane', 'ext-proc');
}

export function extProcAvailability(): { run: boolean } {
  return toolAvailability('the ext-proc test processor', extProcBinary());
}

export interface ExtProcessor {
  /** `127.0.0.1:<port>`. */
  readonly address: string;
  readonly proc: Proc;
  stop(): Promise<void>;
}

/** Starts a processor with these flags (e.g. `-mode hang`). */
export async function startExtProc(args: string[] = []): Promise<ExtProcessor> {
  const proc = new Proc('ext-proc', spawn(extProcBinary(), ['-addr', '127.0.0.1:0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));
  const listening = () => /ext-proc listening on (\S+)/.exec(proc.output.join(''))?.[1];
  try {
    await waitReady(proc, 'listening', () => Promise.resolve(listening() !== undefined));
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { address: listening()!, proc, stop: () => proc.stop() };
}
