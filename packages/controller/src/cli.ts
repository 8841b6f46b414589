// `tollgate-controller`. Exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime failure (a port in
// use, ...), 2 bad flag, environment or kubeconfig.
import { readFileSync } from 'node:fs';
import { Controller } from './controller.js';
import { loadKubeConfig } from './kube/config.js';
import { CatalogError } from '@tollgate/api';
import { createLogs } from './log/components.js';
import { formatHostPort, helpText, isUsageError, parseArgv, resolveOptions, type ControllerOptions } from './options.js';
import { checkSnapshot } from './snapshots/validate.js';
import { translate } from './translate/index.js';

function version(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

function fail(message: string, code: number): never {
  process.stderr.write(`tollgate-controller: ${message}\n`);
  process.exit(code);
}

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let options: ControllerOptions;
  try {
    const args = parseArgv(argv);
    if (args.help) {
      process.stdout.write(helpText(version()));
      return;
    }
    if (args.version) {
      process.stdout.write(`tollgate-controller ${version()}\n`);
      return;
    }
    options = resolveOptions(args, env, version());
  } catch (err) {
    if (isUsageError(err)) fail(`${err.message} [${err.code}]\nRun "tollgate-controller --help" for usage.`, 2);
    throw err;
  }
  let kube: ReturnType<typeof loadKubeConfig>;
  try {
    kube = loadKubeConfig(options.kubeconfig, env);
  } catch (err) {
    if (err instanceof CatalogError) fail(`${err.message} [${err.code}]; ${err.hint}`, 2);
    throw err;
  }

  const logs = createLogs(options.logDirective);
  const log = logs.get('default');
  log.info(
    {
      version: version(),
      credentials: kube.source,
      server: kube.kc.getCurrentCluster()?.server,
      namespace: options.namespace,
      controllerName: options.controllerName,
      leaderElection: options.leaderElection.enabled ? { lease: `${options.namespace}/${options.leaderElection.leaseName}`, identity: options.leaderElection.identity } : false,
      snapshotAddr: formatHostPort(options.snapshotAddr),
    },
    'starting',
  );
  const controller = new Controller({ options, kc: kube.kc, logs, translate, checkSnapshot });
  try {
    await controller.start();
  } catch (err) {
    logs.flush();
    if (err instanceof CatalogError) fail(`${err.message} [${err.code}]; ${err.hint}`, 1);
    fail(`start failed: ${(err as Error)?.stack ?? String(err)}`, 1);
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      process.stderr.write(`tollgate-controller: second ${signal}, exiting without waiting\n`);
      process.exit(1);
    }
    stopping = true;
    log.info(`${signal} received: stopping`);
    controller
      .stop()
      .then(() => {
        log.info('stopped');
        logs.flush();
        process.exit(0);
      })
      .catch((err: unknown) => fail(`shutdown failed: ${(err as Error)?.message ?? String(err)}`, 1));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
