// A proxy in cluster mode: routing comes from the controller's snapshot stream for one
// Gateway; process settings from TOLLGATE_SETTINGS (the Gateway's parameters, rendered by the
// deployer), the defaults otherwise; addresses by flag.
// Not ready until the first snapshot is applied; serves the last good one while the
// controller is away.
import type { ProcessConfig } from '@tollgate/api';
import { ControllerSnapshotSource, type ControllerIdentity, type ControllerSecurity } from '../source/controller-source.js';
import { ProxyProcess, type ProxyProcessOptions } from './proxy-process.js';

export interface ClusterOptions extends Omit<ProxyProcessOptions, 'settings' | 'source'>, ControllerIdentity {
  /** host:port of the controller's snapshot stream. */
  readonly controller: string;
  readonly security: ControllerSecurity;
  readonly settings?: ProcessConfig;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export type ClusterProxy = ProxyProcess<ControllerSnapshotSource>;

export function startClusterProxy(options: ClusterOptions): Promise<ClusterProxy> {
  const { controller, security, gateway, pod, podNamespace, settings, initialBackoffMs, maxBackoffMs, ...rest } = options;
  return ProxyProcess.start({
    ...rest,
    settings: settings ?? {},
    source: (logs) => new ControllerSnapshotSource({ address: controller, security, gateway, pod, podNamespace, log: logs.get('config'), initialBackoffMs, maxBackoffMs }),
  });
}
