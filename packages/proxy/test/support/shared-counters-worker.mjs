// A worker thread of the shared-counters tests (shared-counters.test.ts): it wraps the shared
// memory the test's main thread created, waits at the start barrier with the other threads,
// then takes and gives back bytes or connections as its scenario says and reports what it did.
// Plain JavaScript importing the built proxy (packages/proxy/dist): Node does not run the
// project's TypeScript sources in a worker thread.
import { createServer } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

const { scenario, dist, buffer, worker, start } = workerData;
const { SharedBodyBudget } = await import(new URL('pipeline/shared-body-budget.js', dist).href);
const { ConnectionSlots } = await import(new URL('server/connection-slots.js', dist).href);

/** Tells the main thread this one is ready, then waits until it opens the barrier. */
function barrier() {
  const go = new Int32Array(start);
  parentPort.postMessage({ ready: worker });
  Atomics.wait(go, 0, 0);
}

/** A small deterministic generator per thread (the sizes differ between threads, not between runs). */
function random(seed) {
  let s = seed * 2654435761 + 1;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

/** Runs `then` on the main thread's next message, and ends the thread after it. */
function onRequest(then) {
  parentPort.once('message', (msg) => {
    then(msg);
    parentPort.close();
  });
}

const scenarios = {
  /** Takes `chunk` bytes at a time until refused, holds them; gives them back when asked. */
  budgetFill({ chunk }) {
    const budget = new SharedBodyBudget(buffer, worker);
    barrier();
    let taken = 0;
    let over = 0;
    while (budget.take(chunk)) {
      taken += chunk;
      if (budget.used > budget.max) over++;
    }
    parentPort.postMessage({ taken, over, heldBy: budget.heldBy(worker) });
    onRequest(() => {
      budget.giveBack(taken);
      parentPort.postMessage({ gaveBack: taken });
    });
  },

  /** Takes and gives back chunks of mixed sizes, racing the others; reports what it still holds. */
  budgetChurn({ rounds, maxChunk }) {
    const budget = new SharedBodyBudget(buffer, worker);
    const next = random(worker + 1);
    const held = [];
    let refused = 0;
    let over = 0;
    barrier();
    for (let i = 0; i < rounds; i++) {
      if (held.length === 0 || next() < 0.55) {
        const n = 1 + Math.floor(next() * maxChunk);
        if (budget.take(n)) held.push(n);
        else refused++;
        if (budget.used > budget.max) over++;
      } else budget.giveBack(held.pop());
    }
    const holding = held.reduce((a, b) => a + b, 0);
    parentPort.postMessage({ holding, refused, over });
    onRequest(() => {
      for (const n of held) budget.giveBack(n);
      parentPort.postMessage({ gaveBack: holding });
    });
  },

  /** Takes `bytes` and holds them until the thread is terminated. */
  budgetHold({ bytes }) {
    const budget = new SharedBodyBudget(buffer, worker);
    parentPort.postMessage({ holding: budget.take(bytes) ? bytes : 0 });
    parentPort.on('message', () => undefined);
  },

  /** For each key at once with the others: finds (or allocates) its row and opens connections until refused. */
  slotsRace({ keys, limit }) {
    const slots = new ConnectionSlots(buffer, worker);
    barrier();
    const rows = [];
    const opened = [];
    for (const key of keys) {
      const row = slots.slot(key);
      let n = 0;
      while (slots.acquire(row, limit)) n++;
      rows.push(row);
      opened.push(n);
    }
    parentPort.postMessage({ rows, opened });
    // Holds them until asked to close them (or until terminated, holding them).
    onRequest(() => {
      rows.forEach((row, i) => {
        for (let n = 0; n < opened[i]; n++) slots.release(row);
      });
      parentPort.postMessage({ released: opened.reduce((a, b) => a + b, 0) });
    });
  },

  /**
   * Listens on `port` beside the other threads (reusePort), its connections capped through the
   * table under `key`; writes "in" on each connection it keeps; reports each one it refuses.
   */
  slotsServe({ port, key, limit }) {
    const slots = new ConnectionSlots(buffer, worker);
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.write('in');
      parentPort.postMessage({ accepted: worker });
    });
    slots.guard(server, key, limit, () => parentPort.postMessage({ refused: worker }));
    server.listen({ port, host: '127.0.0.1', reusePort: true }, () => parentPort.postMessage({ listening: server.address().port }));
    parentPort.on('message', () => undefined);
  },
};

scenarios[scenario](workerData.params);
