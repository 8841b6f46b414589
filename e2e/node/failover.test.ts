// Failover between two mock-llm providers on the e2e node, installed as a user installs it: the
// chart, the Gateway API CRDs of the experimental channel (an HTTPRoute rule's `retry`), one
// Gateway (two proxy pods) whose parameters set the proxies' cool-down, and in the team's
// namespace an HTTPRoute whose rules send first to a provider that answers 429 to everything
// (the one mock-llm Deployment behind a Service of its own, with a backendRef filter that asks it
// for 429) and then to the same pods as a healthy provider; the GatewayPolicy of the route
// orders them by priority.
// - Every client request is answered by the second provider, each counted once by the proxy,
//   with one attempt at each provider per request (coolDown 0s: no cool-down without
//   Retry-After); a trace shows both attempts (events 8 and 9 twice); the rule's `retry` is in
//   the proxy's configuration.
// - A 429 with `Retry-After: 30` puts its provider in cool-down: the requests after the first go
//   straight to the second provider, and `gwctl config backends` shows the cool-down.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { installChart } from '../lib/chart.js';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { exec } from '../lib/exec.js';
import { nodeAvailability, REPO_ROOT } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, portForward, until } from './helm-install.lib.js';
import { mockLlm } from './manifests.js';
import { everyProxyAcked, gatewayObjects, GATEWAY, GW_NS, PROXY, PROXY_PODS } from './shared-gateway.lib.js';

const availability = nodeAvailability();
const NS = 'failover';
/** Requests of each test. */
const REQUESTS = 10;
const TOKENS_PER_ANSWER = 12;

/**
 * The shared Gateway of the tenancy tests (two proxy pods), with no cool-down without
 * Retry-After. Requests go to the first proxy pod by name, the one gwctl reads.
 */
const GATEWAY_OBJECTS = gatewayObjects({ coolDown: '0s' });

/** Two more Services of the mock-llm pods: the providers that answer 429 (their backendRefs ask for it). */
const LIMITED = ['limited', 'limited-retry-after'] as const;
const limitedServices = LIMITED.map((name) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: NS },
  spec: { selector: { app: 'mock-llm' }, ports: [{ name: 'http', port: 8080, targetPort: 'http' }] },
}));

const asks429 = (retryAfter?: string) => [
  { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-mock-status', value: '429' }, ...(retryAfter ? [{ name: 'x-mock-retry-after', value: retryAfter }] : [])] } },
];

/** Rule 0 (`x-route: every`): every request fails over; rule 1 (`x-route: cooling`): the first 429 says Retry-After: 30. */
const ROUTE = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: 'chat', namespace: NS },
  spec: {
    parentRefs: [{ name: GATEWAY, namespace: GW_NS }],
    rules: [
      {
        matches: [{ path: { type: 'PathPrefix', value: '/v1' }, headers: [{ name: 'x-route', value: 'every' }] }],
        retry: { codes: [503], attempts: 1, backoff: '100ms' },
        backendRefs: [
          { name: 'limited', port: 8080, filters: asks429() },
          { name: 'mock-llm', port: 8080 },
        ],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/v1' }, headers: [{ name: 'x-route', value: 'cooling' }] }],
        backendRefs: [
          { name: 'limited-retry-after', port: 8080, filters: asks429('30') },
          { name: 'mock-llm', port: 8080 },
        ],
      },
    ],
  },
};

const POLICY = {
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'GatewayPolicy',
  metadata: { name: 'failover', namespace: NS },
  spec: {
    targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }],
    failover: { priorities: [{ backendRef: { name: 'mock-llm' }, priority: 1 }] },
    // Rate limits of the route live in the same policy; a high one, to see the policy applied.
    traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } },
  },
};

interface RoutePolicy {
  localRateLimit: { tokens?: number }[] | null;
}

describe.skipIf(!availability.run)('failover between two mock-llm providers on the e2e node', () => {
  const node = useNode({ gatewayApiChannel: 'experimental' });
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: readonly unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const gwctl = (...args: string[]) =>
    exec(process.execPath, [join(REPO_ROOT, 'packages/gwctl/bin/gwctl.js'), ...args], { env: { PATH: process.env.PATH, HOME: node.current.dir, KUBECONFIG: node.current.kubeconfig } });
  let pod = '';
  let podIp = '';

  async function chat(route: 'every' | 'cooling'): Promise<{ status: number; tokens: number; body: string }> {
    const res = await fetch(`http://${podIp}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-route': route, 'x-mock-prompt-tokens': '2', 'x-mock-completion-tokens': String(TOKENS_PER_ANSWER - 2) },
      body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'fail over' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = await res.text();
    return { status: res.status, tokens: res.status === 200 ? ((JSON.parse(body) as { usage?: { total_tokens?: number } }).usage?.total_tokens ?? -1) : 0, body };
  }

  /** The proxy pod's metric series (by its exact text before the value), through a port-forward to its metrics port. */
  async function metric(series: string): Promise<number> {
    const pf = await portForward(node.current, GW_NS, `pod/${pod}`, 15020);
    try {
      const text = await (await fetch(`http://127.0.0.1:${pf.port}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line ? Number(line.split(' ').at(-1)) : 0;
    } finally {
      pf.close();
    }
  }

  const service = (name: string) => `${name}.${NS}.svc.cluster.local:8080`;
  const attempts = (rule: number, name: string, outcome: string) => metric(`tollgate_upstream_attempts_total{route="${NS}/chat/rule/${rule}",backend="${service(name)}",outcome="${outcome}"}`);

  beforeAll(async () => {
    await installChart(node.current);
    for (const ns of [GW_NS, NS]) await k('create', 'namespace', ns);
    await apply(GATEWAY_OBJECTS);
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(NS, 1));
    await apply([...limitedServices, ROUTE, POLICY]);
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    await k('rollout', 'status', '-n', NS, 'deployment/mock-llm', '--timeout=120s');
    await until('GatewayPolicy failover/failover Accepted', async () => {
      const accepted = policyCondition(JSON.parse(await k('get', 'gatewaypolicy', 'failover', '-n', NS, '-o', 'json')) as PolicyStatus, 'Accepted');
      if (accepted?.status === 'False') throw new Error(`failover/failover: ${accepted.reason}: ${accepted.message}`);
      return accepted?.status === 'True' ? true : undefined;
    }, 60_000);
    // The policy's limit and its priorities come from one translation: a snapshot with one has both.
    await everyProxyAcked<RoutePolicy>(node.current, NS, 'has the failover policy', (policy) => policy?.localRateLimit?.[0]?.tokens === 1_000_000);
    const pods = JSON.parse(await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'json')) as { items: { metadata: { name: string }; status: { podIP?: string } }[] };
    const first = [...pods.items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))[0]!;
    pod = first.metadata.name;
    podIp = first.status.podIP!;
  }, 20 * 60_000);

  it('answers every request from the second provider while the first answers 429, one attempt at each, each request counted once', async () => {
    const before = {
      limited: await attempts(0, 'limited', '429'),
      second: await attempts(0, 'mock-llm', '2xx'),
      answered: await metric(`tollgate_requests_total{route="${NS}/chat/rule/0",status="200"}`),
      tokens: await metric(`tollgate_llm_tokens_total{route="${NS}/chat/rule/0",model="mock-gpt",source="reported"}`),
    };
    for (let i = 0; i < REQUESTS; i++) {
      const r = await chat('every');
      expect(r.status, r.body).toBe(200);
      expect(r.tokens).toBe(TOKENS_PER_ANSWER);
    }
    expect(await attempts(0, 'limited', '429')).toBe(before.limited + REQUESTS);
    expect(await attempts(0, 'mock-llm', '2xx')).toBe(before.second + REQUESTS);
    // Counted once per client request, and charged the answer's usage once.
    expect(await metric(`tollgate_requests_total{route="${NS}/chat/rule/0",status="200"}`)).toBe(before.answered + REQUESTS);
    expect(await metric(`tollgate_llm_tokens_total{route="${NS}/chat/rule/0",model="mock-gpt",source="reported"}`)).toBe(before.tokens + REQUESTS * TOKENS_PER_ANSWER);
    expect(await metric(`tollgate_retries_total{route="${NS}/chat/rule/0",kind="failover"}`)).toBeGreaterThanOrEqual(REQUESTS);

    // The trace of one request: two attempts, the first answered 429, the second 200.
    const trace = await gwctl('trace', `gateway/${GATEWAY}`, '-n', GW_NS, '--raw', '--port', '80', '--', 'http://llm.example/v1/chat/completions', '-H', 'x-route: every', '--json', '{"model":"mock-gpt","messages":[{"role":"user","content":"traced"}]}', '-i');
    expect(trace.code, trace.stderr).toBe(0);
    const events = trace.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { message: { type: string; status?: number } }).message);
    expect(events.filter((e) => e.type === 'backendCallStart')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'backendCallResult').map((e) => e.status)).toEqual([429, 200]);

    // The rule's retry (experimental channel) is in the proxy's configuration.
    const config = await gwctl('config', 'all', `gateway/${GATEWAY}`, '-n', GW_NS, '-o', 'json');
    expect(config.code, config.stderr).toBe(0);
    const routes = (JSON.parse(config.stdout) as { routes: { name: string; retry: unknown; backends: { name: string; priority?: number }[] }[] }).routes;
    const rule0 = routes.find((r) => r.name === `${NS}/chat/rule/0`)!;
    expect(rule0.retry).toEqual({ codes: [503], attempts: 1, backoffMs: 100 });
    expect(rule0.backends.map((b) => [b.name, b.priority ?? 0])).toEqual([
      [service('limited'), 0],
      [service('mock-llm'), 1],
    ]);
  });

  it('puts a provider that answers 429 with Retry-After: 30 in cool-down: later requests go straight to the second, and gwctl shows it', async () => {
    const before = { limited: await attempts(1, 'limited-retry-after', '429'), second: await attempts(1, 'mock-llm', '2xx') };
    for (let i = 0; i < REQUESTS; i++) expect((await chat('cooling')).status).toBe(200);
    // One 429 (the first request's), then the cool-down: every answer from the second provider.
    expect(await attempts(1, 'limited-retry-after', '429')).toBe(before.limited + 1);
    expect(await attempts(1, 'mock-llm', '2xx')).toBe(before.second + REQUESTS);
    const backends = await gwctl('config', 'backends', `gateway/${GATEWAY}`, '-n', GW_NS);
    expect(backends.code, backends.stderr).toBe(0);
    console.info(`[failover] gwctl config backends:\n${backends.stdout}`);
    expect(backends.stdout).toMatch(new RegExp(`^COOLING DOWN$`, 'm'));
    expect(backends.stdout).toMatch(new RegExp(`^Service\\s+${service('limited-retry-after').replace(/\./g, '\\.')}\\s+${NS}\\s+\\d+s\\s+429 with Retry-After: 30$`, 'm'));
  });
});
