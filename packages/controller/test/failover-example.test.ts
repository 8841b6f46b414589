// examples/failover-kubernetes.yaml, read strictly and translated under a Gateway that admits its
// route: the rule's retry and the GatewayPolicy's priorities reach the proxies' snapshot, and the
// policy is accepted.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { caseOptions, CONTROLLER_NAME, parseResources } from './support.js';

const GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: tollgate, generation: 1 }
spec: { controllerName: ${CONTROLLER_NAME} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: llm-gateway, namespace: llm, generation: 1 }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }
`;

describe('examples/failover-kubernetes.yaml', () => {
  it('translates to a route that retries and fails over from OpenAI to Anthropic', () => {
    const example = readFileSync(fileURLToPath(new URL('../../../examples/failover-kubernetes.yaml', import.meta.url)), 'utf8');
    const r = parseResources(`${GATEWAY}---\n${example}`, 'failover-kubernetes.yaml');
    const secret = (name: string) => ({ apiVersion: 'v1' as const, kind: 'Secret' as const, metadata: { name, namespace: 'team' }, data: { apiKey: Buffer.from('sk-example').toString('base64') } });
    const out = translate({ ...r, secrets: [secret('openai-key'), secret('anthropic-key')] }, caseOptions(''));
    const route = out.snapshots.get('llm/llm-gateway')!.binds[0]!.listeners[0]!.routes[0]!;
    expect(route.retry).toEqual({ codes: [502, 503, 504], attempts: 1, backoffMs: 200 });
    expect(route.backends.map((b) => [b.name, b.priority ?? 0])).toEqual([
      ['team/openai', 0],
      ['team/anthropic', 1],
    ]);
    expect(route.policy?.localRateLimit).toEqual([{ kind: 'tokens', tokens: 100000, unit: 'Hours' }]);
    const policy = out.status.gatewayPolicies.get('team/chat-failover')!;
    expect(policy.ancestors[0]!.conditions.map((c) => [c.type, c.status])).toEqual([
      ['Accepted', 'True'],
      ['Attached', 'True'],
    ]);
  });
});
