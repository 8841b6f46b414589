// Team budgets on the e2e node, installed as a user installs them: the chart, one Gateway with
// two proxy pods shared by two teams, each team in its own namespace with its route, API key
// Secrets (consumers of the team's group) and a GatewayPolicy whose global Tokens descriptor
// is keyed by the consumer group and carries the team's budget as its limit override. The
// rate limit service is envoyproxy/ratelimit with Redis, run on the node's address and offered
// to the pods as a Service without a selector (an EndpointSlice naming the node), the way a
// cluster reaches a service it does not run as a pod.
// - A team's budget is shared by its consumers and enforced across both proxy pods: requests
//   sent to each pod in turn are admitted until the team's usage reaches the budget (within
//   one request), then refused by both pods; the other team is not affected.
// - The budget raised by `kubectl patch` is enforced once every proxy pod has ACKed the
//   snapshot carrying it (read from the controller's /snapshots, not after a timer), and the
//   usage counted before the change is kept: only the difference is admitted.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rlsAvailability, rlsBinaries, startRls, type RlsService } from '../../packages/proxy/test/support/rls.js';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { installChart } from '../lib/chart.js';
import { NODE } from '../lib/node/addresses.js';
import { nodeAvailability, REPO_ROOT } from '../lib/tools.js';
import { exec } from '../lib/exec.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { mockLlm } from './manifests.js';
import { everyProxyAcked, teamRoute, GATEWAY, GATEWAY_OBJECTS, GW_NS, PROXY, PROXY_PODS } from './shared-gateway.lib.js';

const nodeTools = nodeAvailability();
const rlsTools = rlsAvailability();
const availability = { run: nodeTools.run && rlsTools.run };
const RLS_NS = 'ratelimit';
const TEAMS = ['team-a', 'team-b'] as const;
type Team = (typeof TEAMS)[number];
const CONSUMERS: Record<Team, readonly string[]> = { 'team-a': ['alice', 'ann'], 'team-b': ['bob'] };
/** Every completion is charged this many tokens: mock-llm answers with the usage it is asked for. */
const PER_REQUEST = 20;
const BUDGET = 100;
const RAISED = 200;

const keyOf = (consumer: string) => `sk-${consumer}-budget-e2e-0001`;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const secretName = (consumer: string) => `key-${consumer}`;

function teamObjects(team: Team, budget: number): unknown[] {
  return [
    teamRoute(team),
    ...CONSUMERS[team].map((c) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName(c), namespace: team },
      type: 'Opaque',
      data: { key: b64(keyOf(c)), consumer: b64(c), group: b64(team) },
    })),
    budgetPolicy(team, budget),
  ];
}

function budgetPolicy(team: Team, budget: number): unknown {
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: { name: 'budget', namespace: team },
    spec: {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }],
      traffic: {
        apiKey: { secretRefs: CONSUMERS[team].map((c) => ({ name: secretName(c) })) },
        rateLimit: {
          global: {
            service: { backendRef: { name: 'ratelimit', namespace: RLS_NS, port: 8081 } },
            domain: 'budgets',
            failureMode: 'FailClosed',
            // A loaded test machine can take longer than the default 100 ms to answer.
            timeout: '2s',
            descriptors: [{ unit: 'Tokens', by: { type: 'ConsumerGroup' }, limit: { requestsPerUnit: budget, unit: 'Days' } }],
          },
        },
      },
    },
  };
}

/** The rate limit service as the pods see it: a Service without selector, its one endpoint the node's address. */
function rateLimitObjects(grpcPort: number): unknown[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'ratelimit', namespace: RLS_NS },
      spec: { ports: [{ name: 'grpc', port: 8081, targetPort: grpcPort, protocol: 'TCP', appProtocol: 'kubernetes.io/h2c' }] },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'ratelimit-node', namespace: RLS_NS, labels: { 'kubernetes.io/service-name': 'ratelimit', 'endpointslice.kubernetes.io/managed-by': 'budgets.e2e.tollgate.dev' } },
      addressType: 'IPv4',
      ports: [{ name: 'grpc', port: grpcPort, protocol: 'TCP', appProtocol: 'kubernetes.io/h2c' }],
      endpoints: [{ addresses: [NODE.ip], conditions: { ready: true } }],
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1beta1',
      kind: 'ReferenceGrant',
      metadata: { name: 'budgets-of-teams', namespace: RLS_NS },
      spec: { from: TEAMS.map((t) => ({ group: 'tollgate.dev', kind: 'GatewayPolicy', namespace: t })), to: [{ group: '', kind: 'Service', name: 'ratelimit' }] },
    },
  ];
}

interface RoutePolicy {
  remoteRateLimit: { descriptors: { limit?: { requestsPerUnit: number } }[] } | null;
}

interface Answer {
  readonly status: number;
  readonly tokens: number;
  readonly body: string;
}

describe.skipIf(!availability.run)('team budgets across two proxy pods on the e2e node (envoyproxy/ratelimit + Redis)', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: readonly unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  const json = async <T>(...args: string[]) => JSON.parse(await k(...args, '-o', 'json')) as T;
  let rls: RlsService | undefined;
  /** The proxy pods' addresses: requests go to each in turn, so both decide. */
  let pods: string[] = [];

  async function chat(podIp: string, team: Team, consumer: string): Promise<Answer> {
    const res = await fetch(`http://${podIp}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-route': team,
        authorization: `Bearer ${keyOf(consumer)}`,
        'x-mock-prompt-tokens': String(PER_REQUEST / 2),
        'x-mock-completion-tokens': String(PER_REQUEST / 2),
      },
      body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hello' }] }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = await res.text();
    const tokens = res.status === 200 ? ((JSON.parse(body) as { usage?: { total_tokens?: number } }).usage?.total_tokens ?? -1) : 0;
    return { status: res.status, tokens, body };
  }

  /**
   * Sends the team's consumers' requests to the pods in turn until both pods refuse one (at
   * most `max` requests); returns what was admitted, per pod.
   */
  async function spendUntilRefused(team: Team, max: number): Promise<{ tokens: number; admittedBy: Map<string, number>; refusedBy: Set<string> }> {
    const admittedBy = new Map<string, number>();
    const refusedBy = new Set<string>();
    let tokens = 0;
    for (let i = 0; i < max && refusedBy.size < pods.length; i++) {
      const pod = pods[i % pods.length]!;
      const consumer = CONSUMERS[team][i % CONSUMERS[team].length]!;
      const r = await chat(pod, team, consumer);
      if (r.status === 200) {
        expect(r.tokens).toBe(PER_REQUEST);
        tokens += r.tokens;
        admittedBy.set(pod, (admittedBy.get(pod) ?? 0) + 1);
      } else {
        expect(r.status, r.body).toBe(429);
        refusedBy.add(pod);
      }
    }
    return { tokens, admittedBy, refusedBy };
  }

  /** Once every Ready proxy pod has ACKed the Gateway's snapshot in which `team`'s budget is `budget`. */
  const everyProxyAckedBudget = (team: Team, budget: number) =>
    everyProxyAcked<RoutePolicy>(node.current, team, `has a budget of ${budget}`, (policy) => policy?.remoteRateLimit?.descriptors[0]?.limit?.requestsPerUnit === budget);

  beforeAll(async () => {
    const bins = rlsBinaries().found!;
    // Each domain a GatewayPolicy sends is <namespace>/<domain>; the budgets are the policies'.
    rls = await startRls(bins, { configs: Object.fromEntries(TEAMS.map((t) => [`${t}-budgets`, `domain: ${t}/budgets\n`])), grpcHost: NODE.ip });
    await installChart(node.current);
    for (const ns of [GW_NS, ...TEAMS, RLS_NS]) await k('create', 'namespace', ns);
    await apply(rateLimitObjects(rls.grpcPort));
    await apply(GATEWAY_OBJECTS);
    for (const team of TEAMS) {
      await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(team, 1));
      await apply(teamObjects(team, BUDGET));
    }
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    for (const team of TEAMS) await k('rollout', 'status', '-n', team, 'deployment/mock-llm', '--timeout=120s');
    for (const team of TEAMS) {
      await until(`GatewayPolicy ${team}/budget Accepted`, async () => {
        const accepted = policyCondition(await json<PolicyStatus>('get', 'gatewaypolicy', 'budget', '-n', team), 'Accepted');
        if (accepted?.status === 'False') throw new Error(`${team}/budget: ${accepted.reason}: ${accepted.message}`);
        return accepted?.status === 'True' ? true : undefined;
      }, 60_000);
      await everyProxyAckedBudget(team, BUDGET);
    }
    const list = await json<{ items: { status: { podIP?: string } }[] }>('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS);
    pods = list.items.map((p) => p.status.podIP!).filter(Boolean).sort();
    if (pods.length !== 2) throw new Error(`expected the two proxy pods' addresses, found ${JSON.stringify(pods)}`);
  }, 20 * 60_000);

  afterAll(async () => {
    await rls?.stop();
  });

  it("a team's budget is shared by its consumers and enforced by both proxy pods, within one request", async () => {
    const spent = await spendUntilRefused('team-a', 3 * (BUDGET / PER_REQUEST) + 2 * pods.length);
    console.info(`[budgets] team-a: ${spent.tokens} tokens admitted, by pod ${JSON.stringify([...spent.admittedBy])}`);
    // Both pods admitted some of the team's requests and both refuse once the budget is spent.
    expect([...spent.admittedBy.keys()].sort()).toEqual(pods);
    expect([...spent.refusedBy].sort()).toEqual(pods);
    // The usage reached the budget and went past it by at most the request that crossed it.
    expect(spent.tokens).toBeGreaterThanOrEqual(BUDGET);
    expect(spent.tokens - PER_REQUEST).toBeLessThanOrEqual(BUDGET);
    // Every consumer of the team is refused now, on either pod; the other team is not.
    for (const pod of pods) for (const c of CONSUMERS['team-a']) expect((await chat(pod, 'team-a', c)).status).toBe(429);
    for (const pod of pods) expect((await chat(pod, 'team-b', 'bob')).status).toBe(200);
  });

  it('a budget raised by kubectl patch is enforced once every proxy ACKed it, keeping the usage counted before', async () => {
    // What team-a spent so far (the previous test: at least the budget) stays counted: the
    // service's counters are keyed by domain, key and window, not by the limit.
    const before = await spendUntilRefused('team-a', 2 * pods.length);
    expect(before.tokens).toBe(0);
    await k('patch', 'gatewaypolicy', 'budget', '-n', 'team-a', '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/traffic/rateLimit/global/descriptors/0/limit/requestsPerUnit', value: RAISED }]));
    const version = await everyProxyAckedBudget('team-a', RAISED);
    console.info(`[budgets] the raised budget's snapshot ${version} ACKed by both proxy pods`);
    const after = await spendUntilRefused('team-a', 3 * (RAISED / PER_REQUEST) + 2 * pods.length);
    console.info(`[budgets] team-a after the raise: ${after.tokens} tokens admitted, by pod ${JSON.stringify([...after.admittedBy])}`);
    expect([...after.refusedBy].sort()).toEqual(pods);
    // Only what the raise added was admitted: never a fresh budget of RAISED tokens.
    expect(after.tokens).toBeGreaterThan(0);
    expect(after.tokens).toBeLessThanOrEqual(RAISED - BUDGET + PER_REQUEST);
  });

  it('gwctl budgets shows each team\'s budget as the service last answered the proxies, one row per team from both pods', async () => {
    const gwctl = (...args: string[]) =>
      exec(process.execPath, [join(REPO_ROOT, 'packages/gwctl/bin/gwctl.js'), ...args], { env: { PATH: process.env.PATH, HOME: node.current.dir, KUBECONFIG: node.current.kubeconfig } });
    const r = await gwctl('budgets', `gateway/${GATEWAY}`, '-n', GW_NS, '-o', 'json', '--by', 'consumer_group');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    interface Row { key: string; source: string; limit: number; used: number; remaining: number; replicas: { proxy: string }[] }
    const doc = JSON.parse(r.stdout) as { proxies: { proxy: string }[]; missing: unknown[]; budgets: Row[] };
    // Both proxy pods were asked, each through its own port-forward.
    expect(doc.proxies).toHaveLength(2);
    expect(doc.missing).toEqual([]);
    const row = (team: Team) => doc.budgets.find((b) => b.key === team);
    // team-a spent its raised budget (the previous tests): the service's last answer says so.
    expect(row('team-a')).toMatchObject({ source: 'global (last answer)', limit: RAISED, remaining: 0 });
    expect(row('team-a')!.used).toBe(RAISED);
    // Both pods asked the service about team-a; the row is the latest answer, not a sum.
    expect(row('team-a')!.replicas).toHaveLength(2);
    expect(row('team-b')).toMatchObject({ source: 'global (last answer)', limit: BUDGET });
    expect(row('team-b')!.used).toBeLessThan(BUDGET);
    const table = await gwctl('budgets', `gateway/${GATEWAY}`, '-n', GW_NS);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^team-a\s+consumer_group\s+200\s+200\s+0\s/m);
  });
});
