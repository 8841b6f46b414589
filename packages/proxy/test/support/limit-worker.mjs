// A worker thread of the shared limit memory tests (../ratelimit-shared-memory.test.ts): a
// follower store on the layout the test's leader posts, and the checks it is told to run.
// Node cannot run the proxy's TypeScript in a worker, so this imports the built JavaScript
// (packages/proxy/dist: `npx tsc -b packages/proxy`); the test checks it is there and current.
//
// Every message is a command; each is answered with { ok: true, ... } or { ok: false, message }.
import { parentPort, workerData } from 'node:worker_threads';
import { DEFAULT_LIMITS } from '@tollgate/api';
import { LimiterStore, LocalLimiter } from '../../dist/ratelimit/local/limiter.js';
import { FollowerLimitMemory } from '../../dist/ratelimit/local/shared-memory.js';

const { worker, workers, now } = workerData;
const memory = new FollowerLimitMemory({ worker, workers });
const store = new LimiterStore(() => now, { maxKeys: workerData.maxKeys, memory });
let limiter = null;
/** Holds of admitted requests kept by a race with `then: 'hold'`, until `settle`. */
let holds = [];

const factsOf = (key) => () => ({ method: 'POST', path: '/', host: 'test', headers: key === null ? {} : { 'x-key': key }, sourceAddress: '127.0.0.1', model: null, consumer: null });

const commands = {
  /** Adopts the leader's layout and compiles the same entries as it did. */
  compile({ layout, scope, configs }) {
    store.adopt(layout);
    try {
      limiter = LocalLimiter.compile('route', scope, configs.map((config, index) => ({ index, config })), store, DEFAULT_LIMITS);
    } catch (e) {
      store.discard();
      throw e;
    }
    store.commit();
    return {};
  },
  /**
   * Waits at the barrier (the test sets start[0] once every thread is there), then checks
   * `rounds` times each key of `keys` (null: the request has no key), reserving `reservation`.
   * An admitted request is settled with `usage` at once, refunded, or held (`then`).
   */
  race({ start, keys, rounds, reservation, then, usage }, reply) {
    const word = new Int32Array(start);
    reply({ ok: true, ready: true });
    Atomics.wait(word, 0, 0);
    const admitted = {};
    for (let r = 0; r < rounds; r++) {
      for (const key of keys) {
        const v = limiter.check(reservation, factsOf(key));
        if (!v.allowed) continue;
        admitted[String(key)] = (admitted[String(key)] ?? 0) + 1;
        if (then === 'settle') v.hold.settle(usage);
        else if (then === 'refund') v.hold.refund();
        else holds.push(v.hold);
      }
    }
    return { admitted };
  },
  /** Settles every held request with `usage` (null: not charged). */
  settle({ usage }) {
    for (const h of holds) h.settle(usage);
    const settled = holds.length;
    holds = [];
    return { settled };
  },
  /** Takes the memory's lock and never gives it back: the test then terminates this thread. */
  lockForever(_, reply) {
    memory.lock.acquire();
    reply({ ok: true, locked: true });
    for (;;);
  },
};

parentPort.on('message', (msg) => {
  const reply = (m) => parentPort.postMessage(m);
  try {
    reply({ ok: true, ...commands[msg.op](msg, reply) });
  } catch (e) {
    reply({ ok: false, message: e instanceof Error ? e.message : String(e) });
  }
});
