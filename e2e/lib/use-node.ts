// Per-suite e2e node: `const node = useNode()` inside a describe block starts the node before
// the suite's tests (waiting for another run's node to stop first: one per machine) and tears
// it down after, pass or fail.
import { afterAll, beforeAll } from 'vitest';
import { startNode, type Node, type NodeOptions } from './node/node.js';

export interface NodeRef {
  readonly current: Node;
}

export function useNode(opts: NodeOptions = {}): NodeRef {
  let node: Node | undefined;
  beforeAll(async () => {
    node = await startNode(opts);
    const marks = Object.entries(node.marks).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ');
    console.info(`e2e node ready in ${(node.startMs / 1000).toFixed(1)} s (${marks})`);
  }, 20 * 60_000);
  afterAll(async () => {
    const started = Date.now();
    await node?.stop();
    if (node) console.info(`e2e node torn down in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 120_000);
  return {
    get current(): Node {
      if (!node) throw new Error('node not started (useNode must be called inside the describe block of the suite)');
      return node;
    },
  };
}
