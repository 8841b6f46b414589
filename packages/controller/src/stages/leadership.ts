// Who leads: a Lease elector with --leader-election, else this replica alone. The leader
// gauge follows it, and each election is recorded as an Event on the Lease.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeLeaseApi, LeaseElector, NoElection } from '../leader/elector.js';
import type { ControllerMetrics } from '../metrics/metrics.js';
import type { ControllerOptions } from '../options.js';
import type { LeadershipSource } from '../runtime/manager.js';
import type { ControllerEvents } from './controller-events.js';

export class Leadership {
  readonly source: LeadershipSource;
  /** The runnable that holds the Lease; undefined without election. */
  readonly elector: LeaseElector | undefined;

  constructor(kc: KubeConfig, o: ControllerOptions, metrics: ControllerMetrics, log: Logger) {
    this.elector = o.leaderElection.enabled ? new LeaseElector(new KubeLeaseApi(kc), o.namespace, o.leaderElection, log) : undefined;
    this.source = this.elector ?? new NoElection();
    metrics.leader.set(this.source.isLeader() ? 1 : 0);
    this.source.onChange((leader) => metrics.leader.set(leader ? 1 : 0));
  }

  readonly isLeader = (): boolean => this.source.isLeader();

  /** Each election from now on is an Event on the Lease. */
  announce(events: ControllerEvents): void {
    this.source.onChange((leader) => {
      const lease = this.elector?.lease;
      if (leader && lease) events.leaderElected(lease);
    });
  }
}
