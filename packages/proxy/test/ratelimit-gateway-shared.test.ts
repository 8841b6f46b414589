// Gateway-level counters as the controller sends them: a GatewayPolicy attached to the whole
// Gateway is one set of counters per replica, shared by every listener on every port; one
// attached to a single listener (sectionName) counts for that listener only. Real sockets on
// two ports; the clock is frozen so no bucket refills during the test.
import { afterEach, describe, expect, it } from 'vitest';
import { NO_AUTH, NO_TRAFFIC_KINDS, decodeSnapshot, encodeSnapshot, type PolicyIR } from '@tollgate/api';
import { twoListeners } from './support/two-listeners.js';
import { onFreePorts, send, simpleConfig, startGateway, startUpstream, type TestGateway } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const LIMIT = 4;

function policy(sectionName: string | null): PolicyIR {
  return {
    origin: { kind: 'GatewayPolicy', namespace: 'apps', name: 'limits', target: { kind: 'Gateway', namespace: 'apps', name: 'gw', sectionName } },
    localRateLimit: [{ kind: 'requests', requests: LIMIT, burst: 0, unit: 'Hours' }],
    remoteRateLimit: null,
    transformation: null,
    ...NO_AUTH,
    ...NO_TRAFFIC_KINDS,
  };
}

async function setup(policyOf: (listener: string) => PolicyIR): Promise<{ gw: TestGateway; urls: [string, string] }> {
  const up = await startUpstream();
  const now = 1_000_000_000;
  const gw = await startGateway((port) => simpleConfig(port, [{ name: 'r', backends: [{ host: up.host }] }]), { clock: () => now });
  cleanups.push(() => up.close(), () => gw.close());
  // Through the wire encoding, as a snapshot from the controller arrives.
  const ports = await onFreePorts(2, async ([a, b]) => {
    const ports: [number, number] = [a!, b!];
    await gw.gateway.runtime.apply(decodeSnapshot(encodeSnapshot(twoListeners(ports, up.port, policyOf))));
    return ports;
  });
  return { gw, urls: [`http://127.0.0.1:${ports[0]}/x`, `http://127.0.0.1:${ports[1]}/x`] };
}

describe('gateway-level counters', () => {
  it('a policy on the whole Gateway is one set of counters for all its listeners', async () => {
    const { urls } = await setup(() => policy(null));
    const statuses: number[] = [];
    // Spread over both listeners: the limit counts them together.
    for (let i = 0; i < LIMIT; i++) statuses.push((await send(urls[i % 2]!)).status);
    expect(statuses).toEqual(Array<number>(LIMIT).fill(200));
    const next = [await send(urls[0]), await send(urls[1])];
    expect(next.map((r) => r.status)).toEqual([429, 429]);
    expect(next[1]!.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('a policy on one listener (sectionName) counts that listener only', async () => {
    const { urls } = await setup((l) => policy(l));
    for (let i = 0; i < LIMIT; i++) expect((await send(urls[0])).status).toBe(200);
    expect((await send(urls[0])).status).toBe(429);
    // The other listener has its own counters, untouched.
    for (let i = 0; i < LIMIT; i++) expect((await send(urls[1])).status).toBe(200);
    expect((await send(urls[1])).status).toBe(429);
  });
});
