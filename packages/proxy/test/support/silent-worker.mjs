// A worker thread that starts and drains when told, and answers nothing else: what the pool
// meets in a worker stuck on something (a view must come without its part).
import { parentPort } from 'node:worker_threads';

parentPort.on('message', (m) => {
  if (m.kind === 'call' && m.call.op === 'drain') parentPort.postMessage({ kind: 'answer', seq: m.seq, ok: true });
});
parentPort.postMessage({ kind: 'started' });
