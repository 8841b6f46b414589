// A GatewayPolicy with a transformation on a real kube-apiserver, as a user meets it: the chart
// installed with helm, the controller binary with the chart ServiceAccount's token, objects
// applied with kubectl, status read back, and the snapshot a proxy receives read through the
// proxy's own stream client.
// - A transformation (a provider key set, the model forced, max_tokens capped) is Accepted and
//   reaches the Gateway's proxy; the key travels as a secret, never in the controller's view.
// - One only translation can judge (an expression over the CEL budget, a header the gateway
//   owns) is Accepted False, Invalid, naming the field, and its route carries no
//   transformation. (What the schema refuses, the API server refuses: e2e/gatewaypolicy.test.ts.)
// Waits are on watches of the objects and on the stream, not on timers.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectStreamClient, routePolicy } from './lib/stream-client.js';
import { installChart, startAsChart, waitForObject, type ControllerProcess } from './controller-process.js';
import { policyCondition, type PolicyStatus } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const INFRA = 'infra';
const TEAM = 'team';
const PROVIDER_KEY = 'sk-provider-0123456789abcdef';

const route = (name: string) => `
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${TEAM} }
spec:
  parentRefs: [ { name: gw, namespace: ${INFRA} } ]
  hostnames: [ ${name}.example.com ]
  rules:
  - backendRefs: [ { name: llm, port: 8000 } ]
`;

const BASE = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${INFRA} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: 8080, allowedRoutes: { namespaces: { from: All } } }
${route('chat')}${route('costly')}${route('owned')}`;

const policy = (name: string, transformation: string) => `
apiVersion: tollgate.dev/v1alpha1
kind: GatewayPolicy
metadata: { name: ${name}, namespace: ${TEAM} }
spec:
  targetRefs: [ { group: gateway.networking.k8s.io, kind: HTTPRoute, name: ${name} } ]
  traffic:
    transformation:
${transformation}`;

const CHAT = policy(
  'chat',
  `      request:
        headers:
          set:
          - { name: authorization, value: '"Bearer ${PROVIDER_KEY}"' }
          - { name: x-team, value: consumer.group }
        body:
          set:
          - { path: model, value: '"gpt-4o-mini"' }
          - { path: max_tokens, value: 'llm.maxTokens == 0 || llm.maxTokens > 1024 ? 1024 : llm.maxTokens' }
          remove: [ max_completion_tokens ]
      response:
        headers:
          remove: [ server ]
`,
);

const COSTLY = policy(
  'costly',
  `      request:
        headers:
          set:
          - { name: x-all, value: 'request.headers.all(a, request.headers.all(b, request.headers.exists(c, a + b == c))) ? "y" : "n"' }
`,
);

const OWNED = policy(
  'owned',
  `      request:
        headers:
          remove: [ Content-Length ]
`,
);


describe.skipIf(!availability.run)('a GatewayPolicy with a transformation', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const apply = (doc: string) => kubectl(['apply', '-f', '-'], doc);
  const dir = mkdtempSync(join(tmpdir(), 'tg-transformation-'));
  const policyWhen = (name: string, holds: (p: PolicyStatus) => boolean) => waitForObject<PolicyStatus>(cluster.current, 'gatewaypolicies.tollgate.dev', name, TEAM, holds);
  let controller: ControllerProcess;

  beforeAll(async () => {
    await installChart(cluster.current, [INFRA, TEAM]);
    controller = await startAsChart(cluster.current, 'controller', ['--snapshot-tls-names=127.0.0.1']);
    await apply(BASE);
  }, 120_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('is Accepted and reaches the Gateway\'s proxy; the key it sets travels as a secret and shows nowhere', { timeout: 90_000 }, async () => {
    await apply(CHAT);
    const p = await policyWhen('chat', (x) => policyCondition(x, 'Accepted') !== undefined);
    expect(policyCondition(p, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
    try {
      const s = await client.receive((x) => !!routePolicy(x, 'chat')?.transformation);
      const t = routePolicy(s, 'chat')!.transformation!;
      expect(t.request.body!.set.map((e) => [e.path, e.value])).toEqual([
        ['model', '"gpt-4o-mini"'],
        ['max_tokens', 'llm.maxTokens == 0 || llm.maxTokens > 1024 ? 1024 : llm.maxTokens'],
      ]);
      expect(t.request.body!.remove).toEqual(['max_completion_tokens']);
      const key = t.request.headers!.set[0]!;
      expect(key.name).toBe('authorization');
      // The proxy holds the value (it sends it upstream) as a Secret: printed, it is redacted.
      expect(JSON.stringify(key.value)).toBe('"[redacted]"');
      expect((key.value as unknown as { reveal(): string }).reveal()).toBe(`"Bearer ${PROVIDER_KEY}"`);
      expect(JSON.stringify(s)).not.toContain(PROVIDER_KEY);
    } finally {
      client.source.stop();
    }
    const view = await (await fetch(`http://${controller.admin}/snapshots`)).text();
    expect(view).toContain('gpt-4o-mini');
    expect(view).not.toContain(PROVIDER_KEY);
  });

  it('what only translation can judge is Accepted False (Invalid), naming the field; its route carries no transformation', { timeout: 90_000 }, async () => {
    await apply(COSTLY);
    await apply(OWNED);
    const costly = await policyWhen('costly', (x) => policyCondition(x, 'Accepted') !== undefined);
    expect(policyCondition(costly, 'Accepted')).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(policyCondition(costly, 'Accepted')!.message).toMatch(
      /^spec\.traffic\.transformation\.request\.headers\.set\[0\]\.value: got "request\.headers\.all\(.*: its estimated cost is \d+, more than the budget of 10000 \(cel\.maxCost\)/,
    );
    const owned = await policyWhen('owned', (x) => policyCondition(x, 'Accepted') !== undefined);
    expect(policyCondition(owned, 'Accepted')).toMatchObject({ status: 'False', reason: 'Invalid' });
    expect(policyCondition(owned, 'Accepted')!.message).toBe(
      'spec.traffic.transformation.request.headers.remove[0]: got "Content-Length": the gateway sets this header itself (framing, the connection); a transformation cannot remove it',
    );
    const client = await connectStreamClient(cluster.current, controller, INFRA, 'gw', dir);
    try {
      const s = await client.receive((x) => routePolicy(x, 'costly') !== undefined && routePolicy(x, 'owned') !== undefined && !!routePolicy(x, 'chat')?.transformation);
      expect(routePolicy(s, 'costly')).toBeNull();
      expect(routePolicy(s, 'owned')).toBeNull();
    } finally {
      client.source.stop();
    }
  });
});
