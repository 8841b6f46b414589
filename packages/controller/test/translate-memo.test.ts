// translate() keeps per-route work between calls (rules, attachments, status, IR objects) for
// route objects it has seen. These tests hold it to three promises: a chain of translations
// over a cluster that keeps changing gives, at every step, what a translation from fresh copies
// gives; an unchanged route hands out the very IR objects it did before (so the per-route wire
// cache hits) while a changed one does not; and what was kept for a deleted route is released.
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { RouteIR } from '@tollgate/api';
import { collectUntilReleased } from '@tollgate/testkit';
import { translate } from '../src/translate/index.js';
import type { Resources } from '../src/translate/types.js';
import type { Gateway, GatewayPolicy, GRPCRoute, HTTPRoute } from '../src/types/gateway-api.js';
import { CONTROLLER_NAME, emptyResources, resultBytes } from './support.js';

const options = { controllerName: CONTROLLER_NAME, gatewayApiVersion: 'v1.6.1' };
const NAMESPACES = ['team-a', 'team-b', 'infra'];

function route(i: number): HTTPRoute {
  const ns = NAMESPACES[i % 2]!;
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `route-${i}`, namespace: ns, generation: 1, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() },
    spec: {
      parentRefs: [{ name: i % 3 === 0 ? 'gw-b' : 'gw-a', namespace: 'infra' }],
      hostnames: [`r${i}.example.com`],
      rules: [{ matches: [{ path: { type: 'PathPrefix', value: `/v1/${i}` } }], backendRefs: [{ name: `svc-${i % 4}`, port: 80 }] }],
    },
  };
}

function gateway(name: string): Gateway {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: 'infra', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {
      gatewayClassName: 'tollgate',
      listeners: [
        { name: 'http', port: 8080, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } },
        { name: 'api', port: 8081, protocol: 'HTTP', hostname: '*.example.com', allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { team: 'a' } } } } },
      ],
    },
  };
}

type Cluster = { -readonly [K in keyof Resources]-?: NonNullable<Resources[K]>[number][] };

function cluster(routes: number): Cluster {
  const r = emptyResources();
  r.gatewayClasses.push({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'tollgate', generation: 1 }, spec: { controllerName: CONTROLLER_NAME } });
  r.gateways.push(gateway('gw-a'), gateway('gw-b'));
  r.namespaces.push(...NAMESPACES.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { team: name === 'team-a' ? 'a' : 'b' } } })));
  for (let s = 0; s < 4; s++)
    for (const ns of NAMESPACES.slice(0, 2)) {
      r.services.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: `svc-${s}`, namespace: ns }, spec: { ports: [{ name: 'http', port: 80, targetPort: 9000 }] } });
      r.endpointSlices.push({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `svc-${s}-x`, namespace: ns, labels: { 'kubernetes.io/service-name': `svc-${s}` } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [`198.18.0.${s + 1}`], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 9000 }],
      });
    }
  for (let i = 0; i < routes; i++) r.httpRoutes.push(route(i));
  r.gatewayPolicies.push({
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: { name: 'limit-route-1', namespace: 'team-b', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'route-1' }], traffic: { rateLimit: { local: [{ requests: 10, unit: 'Minutes' }] } } },
  });
  return r;
}

/** A new object for the route (as an informer delivers an edit): its first backendRef's weight set, maybe its hostnames. */
function withWeight(o: HTTPRoute, weight: number, hostnames?: string[]): HTTPRoute {
  const rule = o.spec.rules![0]!;
  return {
    ...o,
    metadata: { ...o.metadata, generation: (o.metadata.generation ?? 1) + 1 },
    spec: { ...o.spec, ...(hostnames ? { hostnames } : {}), rules: [{ ...rule, backendRefs: [{ ...rule.backendRefs![0]!, weight }, ...rule.backendRefs!.slice(1)] }, ...o.spec.rules!.slice(1)] },
  };
}

/** The object the API server hands back after a status write: status, resourceVersion and managedFields new, the rest equal. */
function statusEcho<T extends { readonly metadata: object }>(o: T, n: number): T {
  const parents = [{ parentRef: { name: 'gw-a' }, controllerName: CONTROLLER_NAME, conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: `written ${n}`, lastTransitionTime: '2026-01-01T00:00:00Z' }] }];
  return { ...structuredClone(o), metadata: { ...structuredClone(o.metadata), resourceVersion: String(1000 + n), managedFields: [{ manager: 'tollgate', operation: 'Update', subresource: 'status', time: `2026-01-01T00:00:${String(n % 60).padStart(2, '0')}Z` }] }, status: { parents, n } };
}

/** One change a user or the cluster might make, applied to the lists in place (new objects, as informers deliver). */
type Change = readonly [
  what: 'route-edit' | 'route-add' | 'route-delete' | 'route-restore' | 'route-recreate' | 'route-parent' | 'route-sections' | 'gateway-listener' | 'gateway-status' | 'route-status' | 'policy-status' | 'namespace-labels' | 'endpoints' | 'slice-protocol' | 'service-edit' | 'service-delete' | 'policy-add' | 'policy-edit' | 'policy-delete',
  n: number,
];
const CHANGES = ['route-edit', 'route-add', 'route-delete', 'route-restore', 'route-recreate', 'route-parent', 'route-sections', 'gateway-listener', 'gateway-status', 'route-status', 'policy-status', 'namespace-labels', 'endpoints', 'slice-protocol', 'service-edit', 'service-delete', 'policy-add', 'policy-edit', 'policy-delete'] as const;

/** A policy on a route or on its rule named `main`: a rate limit, or a failover over its backendRefs. */
function routePolicy(n: number, target: HTTPRoute): GatewayPolicy {
  const failover = n % 2 === 0;
  return {
    apiVersion: 'tollgate.dev/v1alpha1',
    kind: 'GatewayPolicy',
    metadata: { name: `policy-${n}`, namespace: target.metadata.namespace!, generation: 1, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, n % 7)).toISOString() },
    spec: {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: target.metadata.name, ...(n % 3 === 0 ? { sectionName: 'main' } : {}) }],
      ...(failover ? { failover: { priorities: [{ backendRef: { name: `svc-${n % 4}` }, priority: 1 + (n % 3) }] } } : { traffic: { rateLimit: { local: [{ requests: 1 + (n % 50), unit: 'Minutes' as const }] } } }),
    },
  };
}

function apply(r: Cluster, [what, n]: Change, added: { next: number; deleted: HTTPRoute[] }): void {
  const pick = <T>(list: T[]): number => n % list.length;
  switch (what) {
    case 'route-edit': {
      if (!r.httpRoutes.length) return;
      const i = pick(r.httpRoutes);
      r.httpRoutes[i] = withWeight(r.httpRoutes[i]!, n % 5, n % 2 ? [n % 4 === 1 ? 'api.example.com' : `other${n}.test`] : undefined);
      return;
    }
    case 'route-add':
      r.httpRoutes.push(route(added.next++));
      return;
    case 'route-delete':
      if (r.httpRoutes.length) added.deleted.push(...r.httpRoutes.splice(pick(r.httpRoutes), 1));
      return;
    case 'route-recreate': {
      // Deleted and created again under its name: a new creation time, so a new place in the precedence order (ties included).
      if (!r.httpRoutes.length) return;
      const i = pick(r.httpRoutes);
      const o = r.httpRoutes[i]!;
      r.httpRoutes[i] = { ...o, metadata: { ...o.metadata, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n % 20)).toISOString() } };
      return;
    }
    case 'route-restore': {
      // The very object deleted before (a delete undone with the object an informer still held).
      const back = added.deleted.pop();
      if (back && !r.httpRoutes.some((o) => o.metadata.name === back.metadata.name && o.metadata.namespace === back.metadata.namespace)) r.httpRoutes.push(back);
      return;
    }
    case 'route-parent': {
      if (!r.httpRoutes.length) return;
      const i = pick(r.httpRoutes);
      const o = r.httpRoutes[i]!;
      r.httpRoutes[i] = { ...o, spec: { ...o.spec, parentRefs: [{ name: n % 2 ? 'gw-b' : 'gw-a', namespace: 'infra', ...(n % 3 === 0 ? { sectionName: 'api' } : {}) }] } };
      return;
    }
    case 'route-sections': {
      // A second rule, named (what a policy's sectionName names), with two backendRefs (what a failover orders).
      if (!r.httpRoutes.length) return;
      const i = pick(r.httpRoutes);
      const o = r.httpRoutes[i]!;
      const main = { name: 'main', matches: [{ path: { type: 'Exact' as const, value: `/main/${n}` } }], backendRefs: [{ name: `svc-${n % 4}`, port: 80 }, { name: `svc-${(n + 1) % 4}`, port: 80 }] };
      r.httpRoutes[i] = { ...o, metadata: { ...o.metadata, generation: (o.metadata.generation ?? 1) + 1 }, spec: { ...o.spec, rules: [o.spec.rules![0]!, main] } };
      return;
    }
    case 'policy-add':
      if (r.httpRoutes.length) r.gatewayPolicies.push(routePolicy(added.next++, r.httpRoutes[pick(r.httpRoutes)]!));
      return;
    case 'policy-edit': {
      if (!r.gatewayPolicies.length) return;
      const i = pick(r.gatewayPolicies);
      const o = r.gatewayPolicies[i]!;
      const edited = routePolicy(n, { metadata: { name: o.spec.targetRefs[0]!.name, namespace: o.metadata.namespace } } as HTTPRoute);
      r.gatewayPolicies[i] = { ...edited, metadata: { ...o.metadata, generation: (o.metadata.generation ?? 1) + 1 } };
      return;
    }
    case 'policy-delete':
      if (r.gatewayPolicies.length) r.gatewayPolicies.splice(pick(r.gatewayPolicies), 1);
      return;
    case 'gateway-listener': {
      const i = pick(r.gateways);
      const o = r.gateways[i]!;
      const listeners = o.spec.listeners.map((l, j) =>
        j !== n % 2 ? l : n % 3 === 0 ? { ...l, hostname: n % 2 ? 'api.example.com' : undefined } : { ...l, allowedRoutes: { namespaces: { from: n % 3 === 1 ? ('Same' as const) : ('All' as const) } } },
      );
      r.gateways[i] = { ...o, metadata: { ...o.metadata, generation: (o.metadata.generation ?? 1) + 1 }, spec: { ...o.spec, listeners } };
      return;
    }
    case 'gateway-status': {
      // The controller's own status write: a new object, its status and resourceVersion alone changed.
      const i = pick(r.gateways);
      const o = r.gateways[i]!;
      r.gateways[i] = { ...o, metadata: { ...o.metadata, resourceVersion: String(n) }, status: { conditions: [{ type: 'Programmed', status: 'True', reason: 'Programmed', message: `snapshot v${n} applied`, lastTransitionTime: '2026-01-01T00:00:00Z' }] } } as Gateway;
      return;
    }
    case 'route-status': {
      // The echo of a route's status write: its status, resourceVersion and managedFields changed.
      if (!r.httpRoutes.length) return;
      const i = pick(r.httpRoutes);
      r.httpRoutes[i] = statusEcho(r.httpRoutes[i]!, n);
      return;
    }
    case 'policy-status': {
      if (!r.gatewayPolicies.length) return;
      const i = pick(r.gatewayPolicies);
      r.gatewayPolicies[i] = statusEcho(r.gatewayPolicies[i]!, n);
      return;
    }
    case 'namespace-labels': {
      const i = pick(r.namespaces);
      const copy = structuredClone(r.namespaces[i]!);
      copy.metadata!.labels = { team: n % 2 ? 'a' : 'b' };
      r.namespaces[i] = copy;
      return;
    }
    case 'endpoints': {
      const i = pick(r.endpointSlices);
      const copy = structuredClone(r.endpointSlices[i]!);
      copy.endpoints[0]!.conditions = { ready: n % 2 === 0 };
      r.endpointSlices[i] = copy;
      return;
    }
    case 'slice-protocol': {
      // What a slice says of its port's protocol (read where the Service port says nothing).
      const i = pick(r.endpointSlices);
      const copy = structuredClone(r.endpointSlices[i]!);
      copy.ports = [{ name: 'http', port: 9000, ...(n % 2 ? { appProtocol: n % 4 === 1 ? 'kubernetes.io/h2c' : 'kubernetes.io/ws' } : {}) }];
      r.endpointSlices[i] = copy;
      return;
    }
    case 'service-edit': {
      // Its port renumbered (the routes to port 80 no longer resolve) or given an appProtocol.
      if (!r.services.length) return;
      const i = pick(r.services);
      const copy = structuredClone(r.services[i]!);
      copy.spec!.ports = [{ name: 'http', port: n % 3 === 0 ? 81 : 80, targetPort: 9000, ...(n % 2 ? { appProtocol: 'kubernetes.io/h2c' } : {}) }];
      r.services[i] = copy;
      return;
    }
    case 'service-delete':
      if (r.services.length) r.services.splice(pick(r.services), 1);
      return;
  }
}

/** Every IR route of every snapshot, by name. */
function irRoutes(result: ReturnType<typeof translate>): Map<string, RouteIR> {
  const out = new Map<string, RouteIR>();
  for (const s of result.snapshots.values()) for (const b of s.binds) for (const l of b.listeners) for (const r of l.routes) out.set(`${l.name}|${r.name}`, r);
  return out;
}

describe('translate reuse over a changing cluster', () => {
  // 200 chains of translations: 25 s of a 30 s default under a CI run's load, 33 s once.
  it('at every step of a chain of changes, gives the output of a translation from fresh copies (property)', { timeout: 180_000 }, () => {
    const change = fc.tuple(fc.constantFrom(...CHANGES), fc.nat()) as fc.Arbitrary<Change>;
    fc.assert(
      fc.property(fc.array(fc.array(change, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 8 }), (steps) => {
        const r = cluster(12);
        const added = { next: 12, deleted: [] as HTTPRoute[] };
        translate(r, options);
        // The translations of the chain follow one another with nothing in between (what one
        // keeps for the next, such as IRs confirmed by the last snapshot build, is used); the
        // fresh ones come after, from a copy of the cluster at each step.
        const chain: { warm: string; at: Cluster }[] = [];
        for (const batch of steps) {
          for (const c of batch) apply(r, c, added);
          chain.push({ warm: resultBytes(translate({ ...r }, options)), at: structuredClone(r) });
        }
        for (const { warm, at } of chain) expect(warm).toBe(resultBytes(translate(at, options)));
      }),
      { numRuns: 200 },
    );
  });

  it('gives a route deleted and then restored as the same object the policies of now, not those of before it left', () => {
    const r = cluster(4);
    translate({ ...r }, options);
    const [gone] = r.httpRoutes.splice(1, 1); // route-1, which limit-route-1 targets
    translate({ ...r }, options);
    r.gatewayPolicies.splice(0, 1);
    r.httpRoutes.push(gone!);
    expect(resultBytes(translate({ ...r }, options))).toBe(resultBytes(translate(structuredClone(r), options)));
  });

  it('hands out the same IR objects for unchanged routes and new ones for the route that changed', () => {
    const r = cluster(20);
    const before = irRoutes(translate(r, options));
    r.httpRoutes[5] = withWeight(r.httpRoutes[5]!, 7);
    const after = irRoutes(translate({ ...r }, options));
    expect([...after.keys()]).toEqual([...before.keys()]);
    const changed = [...after].filter(([k, ir]) => before.get(k) !== ir).map(([k]) => k);
    expect(changed).toEqual(['http|team-b/route-5/rule/0']);
    expect(after.get('http|team-b/route-5/rule/0')!.backends[0]!.weight).toBe(7);
  });

  it('an endpoint change hands out every route as the same IR object and changes the Service\'s entry of the endpoints alone', () => {
    const r = cluster(20);
    const first = translate(r, options);
    const before = irRoutes(first);
    // svc-1 of team-b scales out: its EndpointSlice gets a second ready address (a new object, as an informer delivers it).
    const at = r.endpointSlices.findIndex((e) => e.metadata?.namespace === 'team-b' && e.metadata?.name === 'svc-1-x');
    const slice = r.endpointSlices[at]!;
    r.endpointSlices[at] = { ...slice, endpoints: [...slice.endpoints, { addresses: ['198.18.1.9'], conditions: { ready: true } }] };
    const second = translate({ ...r }, options);
    const after = irRoutes(second);
    expect([...after].filter(([k, ir]) => before.get(k) !== ir).map(([k]) => k)).toEqual([]);
    const name = 'svc-1.team-b.svc.cluster.local:80';
    // Per Gateway, per entry: whether it is the last translation's object, and its endpoints when not.
    const entries = [...second.snapshots].map(([gw, s]) => {
      const old = new Map(first.snapshots.get(gw)!.endpoints?.map((e) => [e.name, e]));
      return [gw, (s.endpoints ?? []).map((e) => [e.name, e === old.get(e.name) ? 'kept' : e.endpoints.map((p) => `${p.address}:${p.port}`)])];
    });
    const kept = (gw: string) => [...first.snapshots.get(gw)!.endpoints!].map((e) => [e.name, e.name === name ? ['198.18.0.2:9000', '198.18.1.9:9000'] : 'kept']);
    expect(entries).toEqual([...second.snapshots.keys()].map((gw) => [gw, kept(gw)]));
    expect(entries.flatMap(([, e]) => e as unknown[][]).filter(([n]) => n === name)).not.toEqual([]);
    // The slice replaced by one of a new name, as the EndpointSlice controller does: a second
    // slice comes, then the first goes. Neither step makes a route anew.
    const replacement = { ...slice, metadata: { ...slice.metadata, name: 'svc-1-y' }, endpoints: [{ addresses: ['198.18.1.10'], conditions: { ready: true } }] };
    r.endpointSlices.push(replacement);
    const third = irRoutes(translate({ ...r }, options));
    r.endpointSlices.splice(at, 1);
    const fourth = translate({ ...r }, options);
    expect([...third].filter(([k, ir]) => before.get(k) !== ir).map(([k]) => k)).toEqual([]);
    expect([...irRoutes(fourth)].filter(([k, ir]) => before.get(k) !== ir).map(([k]) => k)).toEqual([]);
    const now = [...fourth.snapshots.values()].flatMap((s) => s.endpoints ?? []).find((e) => e.name === name);
    expect(now?.endpoints).toEqual([{ address: '198.18.1.10', port: 9000 }]);
  });

  it('after an endpoint change, an edit of another Service makes anew the routes to that Service alone', () => {
    const r = cluster(20);
    const before = irRoutes(translate(r, options));
    // Two changes in a row, each of some Services only: the second translation skips the routes
    // checked in the first that name neither Service; the routes to svc-2 of team-a must see its edit.
    const at = r.endpointSlices.findIndex((e) => e.metadata?.namespace === 'team-b' && e.metadata?.name === 'svc-1-x');
    r.endpointSlices[at] = { ...r.endpointSlices[at]!, endpoints: [{ addresses: ['198.18.1.9'], conditions: { ready: true } }] };
    translate({ ...r }, options);
    const svc = r.services.findIndex((o) => o.metadata?.namespace === 'team-a' && o.metadata?.name === 'svc-2');
    r.services[svc] = { ...r.services[svc]!, spec: { ports: [{ name: 'http', port: 80, targetPort: 9000, appProtocol: 'kubernetes.io/h2c' }] } };
    const result = translate({ ...r }, options);
    const after = irRoutes(result);
    const toSvc2 = (ir: RouteIR) => ir.backends.some((b) => b.kind === 'service' && b.namespace === 'team-a' && b.service === 'svc-2');
    const changed = [...after].filter(([k, ir]) => before.get(k) !== ir);
    expect(changed.map(([k]) => k)).toEqual([...after].filter(([, ir]) => toSvc2(ir)).map(([k]) => k));
    expect(changed.length).toBeGreaterThan(0);
    for (const [, ir] of changed) expect(ir.backends.map((b) => (b.kind === 'service' ? b.protocol : null))).toEqual(['h2c']);
    expect(resultBytes(result)).toBe(resultBytes(translate(structuredClone(r), options)));
    // The next change is of the same Service's EndpointSlice, which now names the port's
    // protocol (read where the Service port says none): the routes to it follow.
    r.services[svc] = { ...r.services[svc], spec: { ports: [{ name: 'http', port: 80, targetPort: 9000 }] } };
    translate({ ...r }, options);
    const slice = r.endpointSlices.findIndex((e) => e.metadata?.namespace === 'team-a' && e.metadata?.name === 'svc-2-x');
    r.endpointSlices[slice] = { ...r.endpointSlices[slice]!, ports: [{ name: 'http', port: 9000, appProtocol: 'kubernetes.io/h2c' }] };
    const sliced = irRoutes(translate({ ...r }, options));
    expect([...sliced].filter(([, ir]) => toSvc2(ir)).map(([, ir]) => ir.backends.map((b) => (b.kind === 'service' ? b.protocol : null)))).toEqual(changed.map(() => ['h2c']));
    // A ReferenceGrant added says nothing of keys: every route is checked, and none changes.
    r.referenceGrants.push({ apiVersion: 'gateway.networking.k8s.io/v1beta1', kind: 'ReferenceGrant', metadata: { name: 'g', namespace: 'team-a' }, spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'team-b' }], to: [{ group: '', kind: 'Service' }] } });
    const granted = irRoutes(translate({ ...r }, options));
    expect([...granted].filter(([k, ir]) => sliced.get(k) !== ir).map(([k]) => k)).toEqual([]);
  });

  it('keeps the routes part across a Gateway whose status alone changed, not across one whose listeners did', () => {
    const r = cluster(8);
    const first = translate({ ...r }, options);
    const endpointChange = (addr: string) => {
      const at = r.endpointSlices.findIndex((e) => e.metadata?.namespace === 'team-b' && e.metadata?.name === 'svc-1-x');
      r.endpointSlices[at] = { ...r.endpointSlices[at]!, endpoints: [{ addresses: [addr], conditions: { ready: true } }] };
    };
    // The controller's status write on gw-a (after its proxies applied a snapshot), then an endpoint change.
    const gw = r.gateways[0]!;
    r.gateways[0] = { ...gw, metadata: { ...gw.metadata, resourceVersion: '2' }, status: { conditions: [{ type: 'Programmed', status: 'True', reason: 'Programmed', message: 'snapshot abc applied', lastTransitionTime: '2026-01-01T00:00:00Z' }] } } as Gateway;
    endpointChange('198.18.1.1');
    const second = translate({ ...r }, options);
    expect(second.status.httpRoutes).toBe(first.status.httpRoutes);
    expect(resultBytes(second)).toBe(resultBytes(translate(structuredClone(r), options)));
    // A label on the Gateway (metadata other than the status's) is read again.
    r.gateways[0] = { ...r.gateways[0], metadata: { ...r.gateways[0].metadata, labels: { tier: 'edge' } } };
    endpointChange('198.18.1.2');
    const third = translate({ ...r }, options);
    expect(third.status.httpRoutes).not.toBe(second.status.httpRoutes);
    // A listener's allowedRoutes changed: the routes are attached anew.
    const g = r.gateways[0];
    r.gateways[0] = { ...g, metadata: { ...g.metadata, generation: 2 }, spec: { ...g.spec, listeners: g.spec.listeners.map((l) => ({ ...l, allowedRoutes: { namespaces: { from: 'Same' as const } } })) } };
    endpointChange('198.18.1.3');
    const fourth = translate({ ...r }, options);
    expect(fourth.status.httpRoutes).not.toBe(third.status.httpRoutes);
    expect(resultBytes(fourth)).toBe(resultBytes(translate(structuredClone(r), options)));
  });

  it('takes the echo of a status write as the object it echoes: every route IR and status report kept, a label read again', () => {
    const r = cluster(30);
    const first = translate({ ...r }, options);
    const before = irRoutes(first);
    // The echoes of the controller's writes of every route's and policy's status (deep copies: no object shared).
    r.httpRoutes = r.httpRoutes.map((o, n) => statusEcho(o, n));
    r.gatewayPolicies = r.gatewayPolicies.map((o, n) => statusEcho(o, n));
    const echoed = translate({ ...r }, options);
    const echoedAt = structuredClone(r);
    const after = irRoutes(echoed);
    expect(after.size).toBe(before.size);
    expect([...after].filter(([k, ir]) => before.get(k) !== ir).map(([k]) => k)).toEqual([]);
    expect(echoed.status.httpRoutes).toBe(first.status.httpRoutes);
    // Metadata other than what a status write changes is a change: the route is looked at again.
    const i = r.httpRoutes.findIndex((o) => o.metadata.name === 'route-1');
    const o = r.httpRoutes[i]!;
    r.httpRoutes[i] = { ...o, metadata: { ...o.metadata, labels: { tier: 'edge' } } };
    const labelled = translate({ ...r }, options);
    const labelledAt = structuredClone(r);
    expect(labelled.status.httpRoutes).not.toBe(echoed.status.httpRoutes);
    // An edit that keeps the status is read: the weight reaches the route's IR, the other routes' IRs kept.
    r.httpRoutes[i] = withWeight(r.httpRoutes[i], 7);
    const weighted = irRoutes(translate({ ...r }, options));
    expect([...weighted].filter(([k, ir]) => irRoutes(labelled).get(k) !== ir).map(([k]) => k.split('|')[1])).toEqual(['team-b/route-1/rule/0']);
    expect(weighted.get('http|team-b/route-1/rule/0')!.backends[0]!.weight).toBe(7);
    // Each as a translation from fresh copies gives it (after the chain: a fresh one replaces what the chain kept).
    expect(resultBytes(echoed)).toBe(resultBytes(translate(echoedAt, options)));
    expect(resultBytes(labelled)).toBe(resultBytes(translate(labelledAt, options)));
  });

  it('translates the routes again under other options, though no object changed', () => {
    const r = cluster(6);
    translate(r, options);
    for (const other of [{ ...options, gatewayApiVersion: 'v1.5.0' }, { ...options, controllerName: 'example.com/other' }, { ...options, gatewayProxyImages: ['registry.example/proxy:'] }, options]) {
      expect(resultBytes(translate({ ...r }, other))).toBe(resultBytes(translate(structuredClone(r), other)));
    }
  });

  it('checks a route against a ReferenceGrant that changed while it was away, when it comes back after an endpoint change', () => {
    const r = cluster(4);
    // A route of team-b to a Service of team-a: refused (RefNotPermitted) until a ReferenceGrant allows it.
    const base = route(1);
    const across: HTTPRoute = {
      ...base,
      metadata: { ...base.metadata, name: 'across' },
      spec: { ...base.spec, rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/across' } }], backendRefs: [{ name: 'svc-0', namespace: 'team-a', port: 80 }] }] },
    };
    r.httpRoutes.push(across);
    translate({ ...r }, options);
    r.httpRoutes.pop();
    translate({ ...r }, options);
    r.referenceGrants.push({ apiVersion: 'gateway.networking.k8s.io/v1beta1', kind: 'ReferenceGrant', metadata: { name: 'g', namespace: 'team-a' }, spec: { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'team-b' }], to: [{ group: '', kind: 'Service' }] } });
    translate({ ...r }, options);
    // Back (the same object), with an endpoint change of another Service in the same translation.
    r.httpRoutes.push(across);
    const at = r.endpointSlices.findIndex((e) => e.metadata?.namespace === 'team-b' && e.metadata?.name === 'svc-3-x');
    r.endpointSlices[at] = { ...r.endpointSlices[at]!, endpoints: [{ addresses: ['198.18.1.7'], conditions: { ready: true } }] };
    const result = translate({ ...r }, options);
    expect(result.status.httpRoutes.get('team-b/across')!.parents.map((p) => p.conditions.find((c) => c.type === 'ResolvedRefs')?.status)).toEqual(['True']);
    expect(resultBytes(result)).toBe(resultBytes(translate(structuredClone(r), options)));
  });

  it('gives a GRPCRoute the policy targeting it as it is now: created, edited, deleted, and across edits of the route', () => {
    const r = cluster(4);
    const grpc: GRPCRoute = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GRPCRoute',
      metadata: { name: 'echo', namespace: 'team-a', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { parentRefs: [{ name: 'gw-a', namespace: 'infra', sectionName: 'http' }], rules: [{ backendRefs: [{ name: 'svc-0', port: 80 }] }] },
    };
    const policy = (requests: number, generation: number): GatewayPolicy => ({
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'GatewayPolicy',
      metadata: { name: 'echo', namespace: 'team-a', generation, creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'GRPCRoute', name: 'echo' }], traffic: { rateLimit: { local: [{ requests, unit: 'Minutes' }] } } },
    });
    const limitOf = () => {
      const warm = translate({ ...r }, options);
      expect(resultBytes(warm)).toBe(resultBytes(translate(structuredClone(r), options)));
      const route = irRoutes(warm).get('http|team-a/echo/grpc-rule/0')!;
      const local = route.policy?.localRateLimit?.[0];
      return local?.kind === 'requests' ? local.requests : null;
    };
    r.grpcRoutes.push(grpc);
    expect(limitOf()).toBeNull();
    r.gatewayPolicies.push(policy(5, 1));
    expect(limitOf()).toBe(5);
    r.gatewayPolicies[r.gatewayPolicies.length - 1] = policy(6, 2);
    expect(limitOf()).toBe(6);
    r.grpcRoutes[0] = { ...grpc, metadata: { ...grpc.metadata, generation: 2 }, spec: { ...grpc.spec, hostnames: ['echo.example.com'] } };
    expect(limitOf()).toBe(6);
    r.gatewayPolicies.pop();
    expect(limitOf()).toBeNull();
  });

  // Run twice: on the translator as this file's earlier tests left it, and on a fresh copy of
  // its modules (what a file with this test alone sees). What the translator keeps between
  // calls differs between the two, and a form that held deleted routes was caught by one only.
  it('releases what it kept for routes that were deleted (no growth under churn)', async () => {
    await releasesDeleted(translate);
    vi.resetModules();
    const fresh = await import('../src/translate/index.js');
    expect(fresh.translate).not.toBe(translate);
    await releasesDeleted(fresh.translate);
  });
});

async function releasesDeleted(tr: typeof translate): Promise<void> {
  const r = cluster(40);
  tr(r, options);
  const refs = r.httpRoutes.splice(10, 20).map((o) => new WeakRef(o));
  tr({ ...r }, options);
  // Replaced objects (edits) are released too: the old object of every edited route.
  const replaced = r.httpRoutes.slice(0, 5).map((o, i) => {
    r.httpRoutes[i] = { ...structuredClone(o), metadata: { ...o.metadata, generation: 2 } };
    return new WeakRef(o);
  });
  tr({ ...r }, options);
  // What translate() still holds survives the collections.
  await collectUntilReleased([...refs, ...replaced]);
  expect(refs.filter((w) => w.deref() !== undefined)).toHaveLength(0);
  expect(replaced.filter((w) => w.deref() !== undefined)).toHaveLength(0);
}
