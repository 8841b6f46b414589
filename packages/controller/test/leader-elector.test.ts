import type { V1Lease } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LeaseElector, type LeaseApi } from '../src/leader/elector.js';

/** An in-memory Lease store with the API server's optimistic concurrency. */
class FakeLeases implements LeaseApi {
  lease: V1Lease | undefined;
  #rv = 0;
  failing = false;
  async read(): Promise<V1Lease | undefined> {
    if (this.failing) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    return this.lease && structuredClone(this.lease);
  }
  async create(_ns: string, lease: V1Lease): Promise<V1Lease> {
    if (this.failing) throw new Error('connection refused');
    if (this.lease) throw Object.assign(new Error('exists'), { code: 409 });
    this.lease = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(++this.#rv) } };
    return structuredClone(this.lease);
  }
  async replace(_ns: string, _name: string, lease: V1Lease): Promise<V1Lease> {
    if (this.failing) throw new Error('connection refused');
    if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion) throw Object.assign(new Error('conflict'), { code: 409 });
    this.lease = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(++this.#rv) } };
    return structuredClone(this.lease);
  }
  /** Another replica renewing. */
  renewAs(holder: string): void {
    this.lease = { ...this.lease!, spec: { ...this.lease!.spec, holderIdentity: holder, renewTime: new Date() }, metadata: { ...this.lease!.metadata, resourceVersion: String(++this.#rv) } };
  }
}

const cfg = (identity: string) => ({ enabled: true, leaseName: 'l', leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500, identity });
const log = pino({ level: 'silent' });

describe('LeaseElector', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('takes a free Lease and renews it', async () => {
    const api = new FakeLeases();
    const e = new LeaseElector(api, 'ns', cfg('a'), log, () => Date.now());
    const changes: boolean[] = [];
    e.onChange((l) => changes.push(l));
    await e.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(e.isLeader()).toBe(true);
    expect(changes).toEqual([true]);
    expect(api.lease?.spec?.holderIdentity).toBe('a');
    const rv = api.lease?.metadata?.resourceVersion;
    await vi.advanceTimersByTimeAsync(600);
    expect(api.lease?.metadata?.resourceVersion).not.toBe(rv);
    await e.stop();
  });

  it('a follower waits while the holder renews, and takes over only after the Lease expired', async () => {
    const api = new FakeLeases();
    await api.create('ns', { metadata: { name: 'l' }, spec: { holderIdentity: 'other', leaseDurationSeconds: 4, renewTime: new Date() } });
    const e = new LeaseElector(api, 'ns', cfg('b'), log, () => Date.now());
    await e.start();
    let lastRenewal = 0;
    for (let i = 0; i < 20; i++) {
      api.renewAs('other');
      lastRenewal = Date.now();
      await vi.advanceTimersByTimeAsync(500);
      expect(e.isLeader()).toBe(false);
    }
    // The holder stops renewing: takeover after leaseDuration, not before.
    while (!e.isLeader()) await vi.advanceTimersByTimeAsync(100);
    expect(Date.now() - lastRenewal).toBeGreaterThanOrEqual(4000);
    expect(api.lease?.spec?.holderIdentity).toBe('b');
    expect(api.lease?.spec?.leaseTransitions).toBe(1);
    await e.stop();
  });

  it('a leader that cannot renew stops being leader at the renew deadline, even before its loop notices', async () => {
    const api = new FakeLeases();
    const e = new LeaseElector(api, 'ns', cfg('a'), log, () => Date.now());
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

  it('stop() releases the Lease so a follower need not wait for expiry', async () => {
    const api = new FakeLeases();
    const e = new LeaseElector(api, 'ns', cfg('a'), log, () => Date.now());
    await e.start();
    await vi.advanceTimersByTimeAsync(1);
    await e.stop();
    expect(api.lease?.spec?.holderIdentity).toBe('');
    const f = new LeaseElector(api, 'ns', cfg('b'), log, () => Date.now());
    await f.start();
    await vi.advanceTimersByTimeAsync(1);
    expect(f.isLeader()).toBe(true);
    await f.stop();
  });
});
