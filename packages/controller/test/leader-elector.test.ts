// The renew deadline, with fake timers: a leader that cannot renew is no longer leader the
// moment the deadline passes (judged on demand), and says so by then. Everything else the elector does (acquire, renew, step down for
// another holder or after failed renewals, take over an expired Lease, the 409 of a lost race)
// is proven on the real kube-apiserver in e2e/controller-api-faults.test.ts, and the release
// on stop in e2e/controller-leader.test.ts.
import type { V1Lease } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LeaseElector, type LeaseApi } from '../src/leader/elector.js';

/** A Lease store that answers until it is told to fail. */
class FakeLeases implements LeaseApi {
  lease: V1Lease | undefined;
  #rv = 0;
  failing = false;
  async read(): Promise<V1Lease | undefined> {
    if (this.failing) throw new Error('connection refused');
    return this.lease && structuredClone(this.lease);
  }
  async create(_ns: string, lease: V1Lease): Promise<V1Lease> {
    return this.replace(_ns, '', lease);
  }
  async replace(_ns: string, _name: string, lease: V1Lease): Promise<V1Lease> {
    if (this.failing) throw new Error('connection refused');
    this.lease = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(++this.#rv) } };
    return structuredClone(this.lease);
  }
}

const cfg = { enabled: true, leaseName: 'l', leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500, identity: 'a' };
const log = pino({ level: 'silent' });

describe('LeaseElector', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('a leader that cannot renew stops being leader at the renew deadline, even before its loop notices', async () => {
    const api = new FakeLeases();
    const e = new LeaseElector(api, 'ns', cfg, log, () => Date.now());
    const changes: boolean[] = [];
    e.onChange((l) => changes.push(l));
    await e.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(e.isLeader()).toBe(true);
    api.failing = true;
    const lastRenewal = Date.now();
    // isLeader() is judged on demand: false the moment the deadline passes.
    vi.setSystemTime(lastRenewal + 3000);
    expect(e.isLeader()).toBe(false);
    await vi.advanceTimersByTimeAsync(3001);
    expect(changes).toEqual([true, false]);
    await e.stop();
  });
});
