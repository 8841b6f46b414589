// The Kubernetes Events the controller's stages record after the watch (events/recorder.ts
// writes them, leader only; the watch records its own, stages/watch-stage.ts), each a method
// the wiring hands to its source: where a user looks first, since `kubectl describe` shows them.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { EventRecorder } from '../events/recorder.js';
import type { Gateway } from '../types/gateway-api.js';
import type { NackReport } from '../snapshots/stream-server.js';
import type { CacheLookup } from '../watch/lookup.js';

export class ControllerEvents {
  constructor(
    private readonly recorder: EventRecorder,
    private readonly cache: CacheLookup,
    private readonly identity: string,
  ) {}

  /** On the Lease, when this replica became leader. */
  readonly leaderElected = (lease: KubernetesObject): void => {
    this.recorder.record({ ...lease, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'Normal', 'LeaderElection', 'Acquire', `${this.identity} became leader`);
  };

  /** On a Gateway whose proxy settings (annotations) the deployer could not use. */
  readonly invalidProxySettings = (gw: Gateway, problem: string): void => {
    this.recorder.record(gw as unknown as KubernetesObject, 'Warning', 'InvalidProxySettings', 'Deploy', problem);
  };

  /** On a Gateway one of whose proxies refused a snapshot. */
  readonly snapshotRejected = (r: NackReport): void => {
    const gateway = this.cache.gatewayByKey(r.gateway);
    if (gateway) this.recorder.record({ ...(gateway as unknown as KubernetesObject), apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway' }, 'Warning', 'SnapshotRejected', 'Apply', `proxy ${r.pod} refused snapshot ${r.version}: ${r.error}`);
  };
}
