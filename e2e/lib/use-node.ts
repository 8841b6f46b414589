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
    console.info(`e2e node Ready with cluster DNS in ${node.startMs} ms`);
  }, 20 * 60_000);
  afterAll(async () => {
    await node?.stop();
  }, 120_000);
  return {
    get current(): Node {
      if (!node) throw new Error('node not started (useNode must be called inside the describe block of the suite)');
      return node;
    },
  };
}
