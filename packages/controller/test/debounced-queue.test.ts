import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DebouncedQueue } from '../src/queue/debounced-queue.js';

describe('DebouncedQueue', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function counting(opts = { initialDelayMs: 50, maxDelayMs: 5000 }) {
    const runs: number[] = [];
    const q = new DebouncedQueue(() => void runs.push(Date.now()), (err) => { throw err; }, opts);
    return { q, runs };
  }

  it('runs at once when the queue is idle (leading edge)', async () => {
    const { q, runs } = counting();
    const t0 = Date.now();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toEqual([t0]);
    expect(q.state).toBe('cooling');
  });

  it('coalesces changes during the cool-down into one trailing run', async () => {
    const { q, runs } = counting();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 20; i++) q.add();
    expect(q.depth).toBe(20);
    await vi.advanceTimersByTimeAsync(49);
    expect(runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toHaveLength(2);
    expect(q.depth).toBe(0);
  });

  it('returns to the leading edge after a quiet cool-down, with the delay reset', async () => {
    const { q, runs } = counting();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    q.add();
    await vi.advanceTimersByTimeAsync(50); // trailing run, cool-down now 100
    expect(runs).toHaveLength(2);
    expect(q.delayMs).toBe(100);
    await vi.advanceTimersByTimeAsync(100); // quiet cool-down ends
    expect(q.state).toBe('idle');
    expect(q.delayMs).toBe(50);
    const t = Date.now();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs.at(-1)).toBe(t);
  });

  it('a burst of 1,000 changes over 10 s gives at most 10 runs', async () => {
    const { q, runs } = counting();
    for (let i = 0; i < 1000; i++) {
      q.add();
      await vi.advanceTimersByTimeAsync(10);
    }
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runs.length).toBeLessThanOrEqual(10);
    expect(runs.length).toBeGreaterThan(1);
    expect(q.depth).toBe(0);
    expect(q.state).toBe('idle');
  });

  it('with the defaults, 1,000 changes spread over 20 s give at most 10 runs', async () => {
    const runs: number[] = [];
    const q = new DebouncedQueue(() => void runs.push(Date.now()), (err) => { throw err; });
    for (let i = 0; i < 1000; i++) {
      q.add();
      await vi.advanceTimersByTimeAsync(20);
    }
    await vi.advanceTimersByTimeAsync(30_000);
    expect(runs.length).toBeLessThanOrEqual(10);
    expect(q.state).toBe('idle');
  });

  it('the cool-down never exceeds the cap', async () => {
    const { q } = counting({ initialDelayMs: 50, maxDelayMs: 400 });
    for (let i = 0; i < 300; i++) {
      q.add();
      await vi.advanceTimersByTimeAsync(10);
      expect(q.delayMs).toBeLessThanOrEqual(400);
    }
    expect(q.delayMs).toBe(400);
  });

  it('a change while a run is in progress is not lost', async () => {
    let release!: () => void;
    let calls = 0;
    const q = new DebouncedQueue(
      () => {
        calls++;
        if (calls === 1) return new Promise<void>((r) => (release = r));
      },
      () => undefined,
      { initialDelayMs: 50 },
    );
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    q.add();
    expect(q.state).toBe('running');
    release();
    await vi.advanceTimersByTimeAsync(50);
    expect(calls).toBe(2);
  });

  it('an error in a run is reported and the queue goes on', async () => {
    const errors: unknown[] = [];
    let n = 0;
    const q = new DebouncedQueue(() => {
      if (++n === 1) throw new Error('boom');
    }, (e) => errors.push(e), { initialDelayMs: 50 });
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toHaveLength(1);
    q.add();
    await vi.advanceTimersByTimeAsync(50);
    expect(n).toBe(2);
  });

  it('stop() ends scheduling; later changes are ignored', async () => {
    const { q, runs } = counting();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    q.add();
    await q.stop();
    await vi.advanceTimersByTimeAsync(1000);
    q.add();
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toHaveLength(1);
  });
});
