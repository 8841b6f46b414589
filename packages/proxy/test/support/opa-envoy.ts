// OPA with its Envoy external authorization plugin, for the extAuthz tests: the `opa` binary
// scripts/install-test-tools.sh builds (e2e/tools/opa-envoy, OPA at e2e/tools.json's opaEnvoy),
// started as `opa run --server` on free loopback ports with a Rego policy the test writes, ready
// when its health API says the plugin is up, stopped after the suite.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onFreePorts } from '../helpers.js';
import { Proc, readyOrStopped } from './process.js';
import { toolAvailability, wrapperToolBinary } from './tool-cache.js';

export function opaBinary(): string {
  return process.env.TOLLGATE_OPA_ENVOY ?? wrapperToolBinary('opa-envoy', 'opaEnvoy', 'opa');
}

export function opaAvailability(): { run: boolean } {
  return toolAvailability('OPA with the Envoy ext_authz plugin', opaBinary());
}

export interface Opa {
  /** `127.0.0.1:<port>` of the ext_authz gRPC server. */
  readonly grpcAddress: string;
  /** OPA's own REST API (health, data). */
  readonly apiUrl: string;
  stop(): Promise<void>;
}

/** GET /health?plugins: 200 once OPA has loaded the policy and every plugin (the gRPC server) is up. */
async function healthy(apiUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${apiUrl}/health?plugins`, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** Starts OPA deciding with `policy` (Rego); `decision` is the rule's path, e.g. envoy/authz/allow. */
export async function startOpa(policy: string, decision: string): Promise<Opa> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-opa-'));
  const file = join(dir, 'policy.rego');
  await writeFile(file, policy);
  const procs: Proc[] = [];
  try {
    const [apiPort, grpcPort] = await onFreePorts(2, async ([api, grpc]) => {
      const args = [
        'run',
        '--server',
        `--addr=127.0.0.1:${api}`,
        `--set=plugins.envoy_ext_authz_grpc.addr=127.0.0.1:${grpc}`,
        `--set=plugins.envoy_ext_authz_grpc.path=${decision}`,
        '--set=decision_logs.console=false',
        '--log-level=error',
        file,
      ];
      const p = new Proc('opa', spawn(opaBinary(), args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
      await readyOrStopped(p, procs, 'healthy plugins', () => healthy(`http://127.0.0.1:${api}`));
      return [api!, grpc!];
    });
    return {
      grpcAddress: `127.0.0.1:${grpcPort}`,
      apiUrl: `http://127.0.0.1:${apiPort}`,
      stop: async () => {
        await Promise.all(procs.map((p) => p.stop()));
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await Promise.all(procs.map((p) => p.stop()));
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
