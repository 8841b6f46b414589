// Stopping the e2e node leaves the host as it found it: no process, mount, interface, route,
// iptables rule, nft table, cgroup or changed kernel setting.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE } from '../lib/node/addresses.js';
import { hostPicture, processesMentioning } from '../lib/node/host.js';
import { projectImage } from '../lib/node/images.js';
import { startNode } from '../lib/node/node.js';
import { nodeAvailability } from '../lib/tools.js';
import { mockLlm } from './manifests.js';

const availability = nodeAvailability();

describe.skipIf(!availability.run)('e2e node teardown', () => {
  it('leaves no process, mount, interface, route, rule, cgroup or kernel setting behind', async () => {
    const before = hostPicture();
    const node = await startNode({ images: [projectImage('mock-llm')], gatewayApi: false, tollgateCrds: false });
    try {
      // Something to clean up: a pod (network namespace, veth, overlay mounts) behind a Service.
      const ns = 'teardown';
      expect((await node.kubectl(['create', 'namespace', ns])).code).toBe(0);
      expect((await node.kubectl(['apply', '-f', '-'], { input: mockLlm(ns, 1) })).code).toBe(0);
      const rollout = await node.kubectl(['rollout', 'status', '-n', ns, 'deployment/mock-llm', '--timeout=120s']);
      expect(rollout.code, rollout.stderr).toBe(0);
      const during = hostPicture();
      expect(during.links).toEqual(expect.arrayContaining([NODE.hostBridge, NODE.podBridge]));
      expect(during.routes.some((r) => r.startsWith(`unreachable ${NODE.unreachable}`))).toBe(true);
      expect(during.iptables).toMatch(/KUBE-SERVICES/);
      expect(during.cgroups.length).toBeGreaterThan(0);
      expect(processesMentioning(node.dir).length).toBeGreaterThan(0);
    } finally {
      await node.stop();
    }
    const after = hostPicture();
    expect(processesMentioning(node.dir)).toEqual([]);
    expect(existsSync(node.dir)).toBe(false);
    expect(after).toEqual(before);
  }, 600_000);
});
