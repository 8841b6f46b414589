// extProc through a Gateway on the e2e node, installed as a user installs it: the chart, one
// Gateway with two proxy pods, a team's route to its mock-llm, and the extProc test processor
// (e2e/tools/ext-proc, go-control-plane's types; `bash images/build-images.sh ext-proc`) as a
// pod behind a Service, named by a GatewayPolicy's backendRef. Once every proxy pod has ACKed
// the snapshot carrying the policy (read from the controller's /snapshots, not after a timer),
// on each pod:
// - a chat completion reaches mock-llm with the processor's request header edits, and comes back
//   with its response header and its streamed body rewritten;
// - a request with the processor's marker is answered by the processor itself (mock-llm never
//   called);
// - a request the processor hangs on is refused with 502 TG_EXT_PROC_FAILED (FailClosed) and the
//   next one is served.
import { send, type RawResponse } from '@tollgate/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { policyCondition, type PolicyStatus } from '../lib/conditions.js';
import { installChart } from '../lib/chart.js';
import { extProcImage } from '../lib/node/images.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { extProcessor, mockLlm } from './manifests.js';
import { everyProxyAcked, teamRoute, GATEWAY, GATEWAY_OBJECTS, GW_NS, PROXY, PROXY_PODS } from './shared-gateway.lib.js';

const availability = nodeAvailability();
const TEAM = 'proc';
const ROUTE = `${TEAM}/chat/rule/0`;
const MARKER = 'ext-proc-marker';
const REWRITTEN = 'rewritten-by-processor';

const POLICY = {
  apiVersion: 'tollgate.dev/v1alpha1',
  kind: 'GatewayPolicy',
  metadata: { name: 'processor', namespace: TEAM },
  spec: {
    targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }],
    traffic: { extProc: { service: { backendRef: { name: 'ext-proc', port: 9002 } }, processingMode: { responseBodyMode: 'STREAMED' }, messageTimeout: '1s', failureMode: 'FailClosed' } },
  },
};

interface RoutePolicy {
  extProc: { service: string; responseBodyMode: string } | null;
}

describe.skipIf(!availability.run)('extProc through a Gateway on the e2e node', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  const apply = (objects: readonly unknown[]) => kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  let pods: string[] = [];
  /** Calls the proxies made to mock-llm for the route (each upstream answer is timed once). */
  async function upstreamCalls(): Promise<number> {
    let total = 0;
    for (const pod of pods) {
      const text = await (await fetch(`http://${pod}:15020/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      for (const line of text.split('\n')) if (line.startsWith(`tollgate_upstream_latency_seconds_count{route="${ROUTE}"`)) total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return total;
  }

  const chat = (pod: string, headers: Record<string, string> = {}): Promise<RawResponse> => {
    const body = JSON.stringify({ model: 'mock-gpt', stream: true, messages: [{ role: 'user', content: `${MARKER} ${MARKER}` }] });
    return send(`http://${pod}/v1/chat/completions`, { method: 'POST', headers: { 'x-route': TEAM, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers }, body });
  };

  beforeAll(async () => {
    await node.current.importImage(extProcImage());
    await installChart(node.current);
    for (const ns of [GW_NS, TEAM]) await k('create', 'namespace', ns);
    await apply(GATEWAY_OBJECTS);
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(TEAM, 1));
    await kubectlOk(node.current, ['apply', '-f', '-'], extProcessor(TEAM));
    await apply([teamRoute(TEAM), POLICY]);
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', GW_NS, '--timeout=180s');
    await k('rollout', 'status', '-n', GW_NS, `deployment/${PROXY}`, '--timeout=180s');
    await k('rollout', 'status', '-n', TEAM, 'deployment/mock-llm', '--timeout=120s');
    await k('rollout', 'status', '-n', TEAM, 'deployment/ext-proc', '--timeout=120s');
    await until(`GatewayPolicy ${TEAM}/processor Accepted`, async () => {
      const status = JSON.parse(await k('get', 'gatewaypolicy', 'processor', '-n', TEAM, '-o', 'json')) as PolicyStatus;
      const accepted = policyCondition(status, 'Accepted');
      if (accepted?.status === 'False') throw new Error(`${TEAM}/processor: ${accepted.reason}: ${accepted.message}`);
      return accepted?.status === 'True' ? true : undefined;
    }, 60_000);
    await everyProxyAcked<RoutePolicy>(node.current, TEAM, 'has extProc', (p) => p?.extProc?.responseBodyMode === 'STREAMED');
    const list = JSON.parse(await k('get', 'pods', '-n', GW_NS, '-l', PROXY_PODS, '-o', 'json')) as { items: { status: { podIP?: string } }[] };
    pods = list.items.map((p) => p.status.podIP!).filter(Boolean).sort();
    if (pods.length !== 2) throw new Error(`expected the two proxy pods' addresses, found ${JSON.stringify(pods)}`);
    // A proxy's channel to the processor opened when it compiled the policy, which can be before
    // the processor's Service had a ready endpoint (its connection refused, then retried with a
    // backoff of up to 2 s, failing calls at once meanwhile): the tests begin once every proxy's
    // channel is connected, as each proxy's metric says.
    await until('every proxy connected to the processor', async () => {
      for (const pod of pods) {
        const text = await (await fetch(`http://${pod}:15020/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
        if (!new RegExp(`^tollgate_ext_proc_service_connected\\{service="ext-proc\\.${TEAM}\\.svc\\.cluster\\.local:9002"\\} 1$`, 'm').test(text)) return undefined;
      }
      return true;
    }, 60_000);
  }, 20 * 60_000);

  it('a streamed chat completion goes through the processor on each proxy: headers set, every event rewritten', async () => {
    for (const pod of pods) {
      const r = await chat(pod);
      expect(r.status, r.body).toBe(200);
      expect(r.headers['x-ext-proc-response'], pod).toBe('seen');
      const events = r.body.split('\n\n').filter((e) => e.startsWith('data: '));
      expect(events.at(-1), pod).toBe('data: [DONE]');
      expect(r.body, pod).not.toContain(MARKER);
      expect(r.body, pod).toContain(REWRITTEN);
    }
  });

  it('the processor\'s immediate response answers on each proxy; mock-llm is not called', async () => {
    const served = await upstreamCalls();
    for (const pod of pods) {
      const r = await chat(pod, { 'x-ext-proc-immediate': '403' });
      expect(r.status, pod).toBe(403);
      expect(r.body, pod).toBe('answered by the processor at request headers');
    }
    expect(await upstreamCalls()).toBe(served);
  });

  it('a processor that hangs: 502 TG_EXT_PROC_FAILED (FailClosed), then the next request is served', async () => {
    for (const pod of pods) {
      const r = await chat(pod, { 'x-ext-proc-mode': 'hang' });
      expect(r.status, pod).toBe(502);
      expect(r.headers['x-tollgate-error'], pod).toBe('TG_EXT_PROC_FAILED');
      expect((await chat(pod)).status, pod).toBe(200);
    }
  });
});
