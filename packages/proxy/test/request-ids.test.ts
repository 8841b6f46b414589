// Request ids over one shared counter (server/request-ids.ts): threads that share it never hand
// out an id twice, and a thread that joins it later (a restarted worker) goes on from the count.
import { describe, expect, it } from 'vitest';
import { RequestIds } from '../src/server/request-ids.js';

describe('request ids', () => {
  it('counts from 1 alone; over a shared counter, every thread continues the one sequence', () => {
    const alone = new RequestIds();
    expect([alone.next(), alone.next()]).toEqual([1, 2]);
    const main = RequestIds.shared();
    const worker = new RequestIds(main.buffer!);
    expect([main.next(), worker.next(), worker.next(), main.next()]).toEqual([1, 2, 3, 4]);
    const restarted = new RequestIds(main.buffer!);
    expect(restarted.next()).toBe(5);
  });
});
