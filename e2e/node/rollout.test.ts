// A backend Deployment rolled under load on the e2e node: the chart installed with helm, one
// Gateway, a route to mock-llm (two replicas run as a backend is for a rollout without errors:
// a preStop delay, so a pod leaves the EndpointSlice while it still serves, then a drain on
// SIGTERM), and clients sending chat completions through the Gateway the whole time while
// `kubectl rollout restart` replaces every backend pod. Every answer must be 200: pods coming
// and going (not ready yet, leaving the EndpointSlice, connections refused once their ports
// close) never surface as errors. Without the delay a pod closes its kept-alive connections
// while a proxy may still send on them: a POST cut so after it was written is not sent again
// without a route `retry` (docs/retries-failover.md), and one CI run saw 2 of 4,489 answered 502.
import { describe, expect, it, beforeAll } from 'vitest';
import { installChart } from '../lib/chart.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { gatewayWithRoute, mockLlm } from './manifests.js';

const availability = nodeAvailability();
const NS = 'rollout';
const GATEWAY = 'llm';
const PROXY = `${GATEWAY}-tollgate`;
/** Clients sending one request after another. */
const CLIENTS = 4;
/** A bound on the load, whatever happens: no client sends more. */
const MAX_PER_CLIENT = 20_000;

const OBJECTS = gatewayWithRoute(NS, GATEWAY, { name: 'mock-llm', port: 8080 });

const BODY = JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'roll' }], max_tokens: 8 });

describe.skipIf(!availability.run)('a backend Deployment rolled under load', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  let address = '';

  const chat = async (): Promise<string> => {
    try {
      const res = await fetch(`http://${address}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, signal: AbortSignal.timeout(30_000) });
      const text = await res.text();
      return res.status === 200 ? '200' : `${res.status} ${text.slice(0, 200)}`;
    } catch (err) {
      return `error ${(err as Error).message}`;
    }
  };

  beforeAll(async () => {
    await installChart(node.current);
    await k('create', 'namespace', NS);
    await kubectlOk(node.current, ['apply', '-f', '-'], mockLlm(NS, 2, { preStopSeconds: 5 }));
    await k('rollout', 'status', '-n', NS, 'deployment/mock-llm', '--timeout=120s');
    await kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: OBJECTS }));
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', NS, '--timeout=180s');
    await k('rollout', 'status', '-n', NS, `deployment/${PROXY}`, '--timeout=180s');
    address = (await k('get', 'gateway', GATEWAY, '-n', NS, '-o', 'jsonpath={.status.addresses[0].value}')).trim();
    await until(`${address} answers`, async () => ((await chat()) === '200' ? true : undefined), 60_000);
  }, 20 * 60_000);

  it('answers every request 200 while every backend pod is replaced', async () => {
    const before = (await k('get', 'pods', '-n', NS, '-l', 'app=mock-llm', '-o', 'jsonpath={.items[*].metadata.uid}')).trim().split(/\s+/);
    const answers = new Map<string, number>();
    let stop = false;
    let sent = 0;
    const client = async () => {
      for (let i = 0; i < MAX_PER_CLIENT && !stop; i++) {
        const a = await chat();
        sent++;
        answers.set(a, (answers.get(a) ?? 0) + 1);
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, client));
    try {
      await until('load flowing', async () => (sent >= 50 ? true : undefined), 60_000);
      await k('rollout', 'restart', '-n', NS, 'deployment/mock-llm');
      await k('rollout', 'status', '-n', NS, 'deployment/mock-llm', '--timeout=180s');
      // Every old pod gone (not only replaced in the Deployment's count).
      await until('the old pods are gone', async () => {
        const now = (await k('get', 'pods', '-n', NS, '-l', 'app=mock-llm', '-o', 'jsonpath={.items[*].metadata.uid}')).trim().split(/\s+/);
        return now.some((uid) => before.includes(uid)) ? undefined : true;
      }, 120_000);
      const after = sent;
      await until('requests after the rollout', async () => (sent >= after + 50 ? true : undefined), 60_000);
    } finally {
      stop = true;
      await load;
    }
    console.info(`rollout under load: ${sent} requests, answers ${JSON.stringify(Object.fromEntries(answers))}`);
    expect(Object.fromEntries(answers)).toEqual({ '200': sent });
  });
});
