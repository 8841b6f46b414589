// cors (and csrf beside it) through a Gateway on the e2e node, installed as a user installs it:
// the chart, one Gateway with two proxy pods, a team's route to its mock-llm and a
// GatewayPolicy setting cors and csrf on that route. Once every proxy pod has ACKed the
// snapshot carrying the policy (read from the controller's /snapshots, not after a timer), on
// each pod:
// - a preflight from the front end's origin is answered by the proxy itself (204 with the
//   allowances, the pod's mock-llm never called), and one from another origin is refused (403);
// - a cross-origin chat completion from the front end's origin reaches mock-llm and comes back
//   with Access-Control-Allow-Origin (echoed, with credentials), the exposed headers and Vary;
// - the same POST from a page of another site is refused by csrf (403) and never forwarded.
import { send, type RawResponse } from '@tollgate/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { installChart } from '../lib/chart.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { mockLlm } from './manifests.js';
import { everyProxyAcked, GATEWAY, GATEWAY_OBJECTS, GW_NS, PROXY, PROXY_PODS } from './shared-gateway.lib.js';

const availability = nodeAvailability();
const TEAM = 'web';
const FRONT_END = 'https://chat.example.com';
const ROUTE = `${TEAM}/chat/rule/0`;

/** The team's route, by path alone: a browser's preflight carries no custom header a match could read. */
const ROUTE_OBJECT = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: 'chat', namespace: TEAM },
  spec: { parentRefs: [{ name: GATEWAY, namespace: GW_NS }], rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/v1' } }], backendRefs: [{ name: 'mock-llm', port: 8080 }] }] },
};

const POLICY = {
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'GatewayPolicy',
  metadata: { name: 'browser', namespace: TEAM },
  spec: {
    targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }],
    traffic: {
      cors: {
        allowOrigins: [FRONT_END, 'https://*.preview.example.com'],
        allowMethods: ['GET', 'POST'],
        allowHeaders: ['authorization', 'content-type'],
        exposeHeaders: ['x-request-id'],
        allowCredentials: true,
        maxAge: 600,
      },
      csrf: { additionalOrigins: [FRONT_END] },
    },
  },
};

interface RoutePolicy {
  cors: { allowOrigins: string[] } | null;
  csrf: { additionalOrigins: string[] } | null;
}

describe.skipIf(!availability.run)('cors and csrf through a Gateway on the e2e node', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: readonly unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  /** The proxy pods' addresses: every check runs on each. */
  let pods: string[] = [];
  /** A counter of the proxy pods' metrics (:15020), summed over both pods, for the team's route. */
  async function counted(metric: string, labels = ''): Promise<number> {
    let total = 0;
    for (const pod of pods) {
      const text = await (await fetch(`http://${pod}:15020/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      for (const line of text.split('\n')) {
        if (line.startsWith(`${metric}{route="${ROUTE}"${labels}`)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
    }
    return total;
  }
  /** Calls the proxies made to mock-llm for the route (each upstream answer is timed once). */
  const upstreamCalls = () => counted('tollgate_upstream_latency_seconds_count');

  const preflight = (pod: string, origin: string): Promise<RawResponse> =>
    send(`http://${pod}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });

  const chat = (pod: string, origin: string): Promise<RawResponse> => {
    const body = JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hello' }] });
    return send(`http://${pod}/v1/chat/completions`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      body,
    });
  };

  beforeAll(async () => {
    await installChart(node.current);
    for (const ns of [GW_NS, TEAM]) await k('create', 'namespace', ns);
    await apply(GATEWAY_OBJECTS);
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(TEAM, 1));
    await apply([ROUTE_OBJECT, POLICY]);
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    await k('rollout', 'status', '-n', TEAM, 'deployment/mock-llm', '--timeout=120s');
    await until(`GatewayPolicy ${TEAM}/browser Accepted`, async () => {
      const status = JSON.parse(await k('get', 'gatewaypolicy', 'browser', '-n', TEAM, '-o', 'json')) as PolicyStatus;
      const accepted = policyCondition(status, 'Accepted');
      if (accepted?.status === 'False') throw new Error(`${TEAM}/browser: ${accepted.reason}: ${accepted.message}`);
      return accepted?.status === 'True' ? true : undefined;
    }, 60_000);
    await everyProxyAcked<RoutePolicy>(node.current, TEAM, 'has cors and csrf', (p) => p?.cors?.allowOrigins[0] === FRONT_END && p.csrf !== null);
    const list = JSON.parse(await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'json')) as { items: { status: { podIP?: string } }[] };
    pods = list.items.map((p) => p.status.podIP!).filter(Boolean).sort();
    if (pods.length !== 2) throw new Error(`expected the two proxy pods' addresses, found ${JSON.stringify(pods)}`);
  }, 20 * 60_000);

  it('a preflight from the front end is answered by each proxy itself, never forwarded; one from another origin is refused', async () => {
    const served = await upstreamCalls();
    const allowed = await counted('tollgate_cors_preflights_total', ',result="allowed"');
    for (const pod of pods) {
      const r = await preflight(pod, FRONT_END);
      expect(r.status, pod).toBe(204);
      expect(r.headers, pod).toMatchObject({
        'access-control-allow-origin': FRONT_END,
        'access-control-allow-credentials': 'true',
        'access-control-allow-methods': 'GET, POST',
        'access-control-allow-headers': 'authorization, content-type',
        'access-control-max-age': '600',
      });
      const preview = await preflight(pod, 'https://pr-42.preview.example.com');
      expect(preview.headers['access-control-allow-origin'], pod).toBe('https://pr-42.preview.example.com');
      const other = await preflight(pod, 'https://chat.example.com.evil.test');
      expect(other.status, pod).toBe(403);
      expect(other.headers['access-control-allow-origin'], pod).toBeUndefined();
    }
    expect(await upstreamCalls()).toBe(served);
    expect(await counted('tollgate_cors_preflights_total', ',result="allowed"')).toBe(allowed + 2 * pods.length);
  });

  it('a cross-origin chat completion from the front end reaches mock-llm and carries the allowance on each proxy', async () => {
    const served = await upstreamCalls();
    for (const pod of pods) {
      const r = await chat(pod, FRONT_END);
      expect(r.status, r.body).toBe(200);
      expect((JSON.parse(r.body) as { object?: string }).object).toBe('chat.completion');
      expect(r.headers['access-control-allow-origin'], pod).toBe(FRONT_END);
      expect(r.headers['access-control-allow-credentials'], pod).toBe('true');
      expect(r.headers['access-control-expose-headers'], pod).toBe('x-request-id');
      expect(String(r.headers.vary).toLowerCase(), pod).toContain('origin');
    }
    expect(await upstreamCalls()).toBe(served + pods.length);
  });

  it('the same POST from a page of another site is refused by csrf on each proxy, and not forwarded', async () => {
    const served = await upstreamCalls();
    for (const pod of pods) {
      const r = await chat(pod, 'https://evil.example');
      expect(r.status, pod).toBe(403);
      expect(r.headers['x-tollgate-error'], pod).toBe('TG_CSRF_REFUSED');
      // An API call (a JSON body) gets OpenAI's error shape.
      expect(JSON.parse(r.body), pod).toMatchObject({ error: { type: 'permission_error', code: 'TG_CSRF_REFUSED' } });
    }
    expect(await upstreamCalls()).toBe(served);
    expect(await counted('tollgate_csrf_refusals_total', ',reason="cross_origin"')).toBe(pods.length);
  });
});
