import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DebouncedQueue } from '../src/queue/debounced-queue.js';

describe('DebouncedQueue', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function counting(opts = { minDelayMs: 50, maxDelayMs: 5000 }) {
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

  it('returns to the leading edge after a quiet cool-down', async () => {
    const { q, runs } = counting();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    q.add();
    await vi.advanceTimersByTimeAsync(50); // trailing run
    expect(runs).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(50); // quiet cool-down ends
    expect(q.state).toBe('idle');
    const t = Date.now();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs.at(-1)).toBe(t);
  });

  /** A queue whose runs each take `costMs` of (fake) time. */
  function slow(costMs: number, opts: { minDelayMs?: number; maxDelayMs?: number } = { minDelayMs: 50, maxDelayMs: 5000 }) {
    const runs: number[] = [];
    const q = new DebouncedQueue(async () => {
      runs.push(Date.now());
      await new Promise<void>((r) => setTimeout(r, costMs));
    }, (err) => { throw err; }, opts);
    return { q, runs };
  }

  it('cools down for as long as the last run took, within its bounds', async () => {
    for (const [cost, expected] of [[10, 50], [300, 300], [9000, 5000]] as const) {
      const { q } = slow(cost);
      q.add();
      await vi.advanceTimersByTimeAsync(cost);
      expect(q.state).toBe('cooling');
      expect(q.delayMs).toBe(expected);
      await q.stop();
    }
  });

  it('without a floor, a change after a quick run waits only for the rest of a cool-down as long as that run', async () => {
    const { q, runs } = slow(30, {});
    q.add();
    await vi.advanceTimersByTimeAsync(30); // the run
    expect(q.delayMs).toBe(30);
    await vi.advanceTimersByTimeAsync(20);
    const t = Date.now();
    q.add(); // 20 ms into the 30 ms cool-down
    await vi.advanceTimersByTimeAsync(10);
    expect(runs.at(-1)).toBe(t + 10);
    await vi.advanceTimersByTimeAsync(60); // that run and a quiet cool-down
    expect(q.state).toBe('idle');
    const t2 = Date.now();
    q.add();
    await vi.advanceTimersByTimeAsync(0);
    expect(runs.at(-1)).toBe(t2);
  });

  it('a steady trickle of changes is reconciled within two runs of each change, not held to the cap', async () => {
    const { q, runs } = slow(200);
    const changes: number[] = [];
    for (let i = 0; i < 100; i++) {
      changes.push(Date.now());
      q.add();
      await vi.advanceTimersByTimeAsync(100);
    }
    await vi.advanceTimersByTimeAsync(1000);
    expect(q.state).toBe('idle');
    // Each change is picked up by the first run that starts after it: no later than the end
    // of the run in progress plus one cool-down of the same length.
    for (const t of changes) {
      const pickedUp = runs.find((r) => r >= t)!;
      expect(pickedUp - t).toBeLessThanOrEqual(2 * 200);
    }
  });

  it('keeps the controller busy about half its time under a continuous burst', async () => {
    const { q, runs } = slow(300);
    for (let i = 0; i < 1000; i++) {
      q.add();
      await vi.advanceTimersByTimeAsync(10);
    }
    await vi.advanceTimersByTimeAsync(5000);
    // 10 s of changes, 300 ms per run and 300 ms of cool-down after it: 17 runs, not 1,000.
    expect(runs.length).toBeLessThanOrEqual(18);
    expect(runs.length).toBeGreaterThanOrEqual(16);
    expect(q.depth).toBe(0);
    expect(q.state).toBe('idle');
  });

  it('the cool-down never exceeds the cap', async () => {
    const { q } = slow(1000, { minDelayMs: 50, maxDelayMs: 400 });
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
      { minDelayMs: 50 },
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
    }, (e) => errors.push(e), { minDelayMs: 50 });
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
