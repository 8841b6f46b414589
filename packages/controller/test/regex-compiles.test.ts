// The controller compiles a route's regular expression once, however many times it translates
// and checks the snapshots that route is in: translation (the route's status) and the check
// of each snapshot before it is offered to proxies use the same compiled pattern. A pattern
// whose written-out size is over the bound is never compiled at all.
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { V1Service } from '@kubernetes/client-node';
import { translate } from '../src/translate/index.js';
import { checkSnapshot } from '../src/snapshots/validate.js';
import type { HTTPRoute } from '../src/types/gateway-api.js';
import { CONTROLLER_NAME, parseResources } from './support.js';

// re2js as @tollgate/api loads it (the same CommonJS instance): spied on, never replaced.
// (The controller does not depend on re2js itself, hence the type written here.)
const apiRequire = createRequire(createRequire(import.meta.url).resolve('@tollgate/api'));
const { RE2JS } = apiRequire('re2js') as { RE2JS: { compile(pattern: string): unknown } };

const options = { controllerName: CONTROLLER_NAME, gatewayApiVersion: 'v1.6.1' };
const HUGE = `/v1/${'(?:[a-y]?){999}'.repeat(60)}`;
const OVER_PROGRAM = '[b-z]{150}[0-9]{101}';
const GOOD = '/v1/compiled-once/[^/]+';

const base = parseResources(
  `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: tollgate, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }
spec: { controllerName: ${CONTROLLER_NAME} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: default, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }
spec:
  gatewayClassName: tollgate
  listeners: [{ name: http, port: 80, protocol: HTTP }]
`,
  'base',
);

function route(name: string, generation: number, match: Record<string, unknown>): HTTPRoute {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: 'default', generation, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { parentRefs: [{ name: 'gw' }], rules: [{ matches: [match], backendRefs: [{ name: 'llm', port: 80 }] }] },
  };
}

const service = (port: number): V1Service => ({ metadata: { name: 'llm', namespace: 'default' }, spec: { ports: [{ name: 'http', port }] } });

afterEach(() => vi.restoreAllMocks());

describe('regular expressions in the controller', () => {
  it('are compiled once across translations and snapshot checks, and not at all past the written-out bound', () => {
    const compile = vi.spyOn(RE2JS, 'compile');
    const routes = [
      route('huge', 1, { path: { type: 'RegularExpression', value: HUGE } }),
      route('big', 1, { path: { type: 'PathPrefix', value: '/b' }, headers: [{ name: 'x-id', type: 'RegularExpression', value: OVER_PROGRAM }] }),
      route('good', 1, { path: { type: 'RegularExpression', value: GOOD } }),
    ];
    // Changes elsewhere (a Service, then another route) translate everything again.
    const rounds = [
      { ...base, httpRoutes: routes, services: [service(80)] },
      { ...base, httpRoutes: routes, services: [service(81)] },
      { ...base, httpRoutes: [...routes, route('other', 1, { path: { type: 'Exact', value: '/o' } })], services: [service(80)] },
      // A new object of the good route (its generation changed, not its pattern).
      { ...base, httpRoutes: [routes[0]!, routes[1]!, route('good', 2, { path: { type: 'RegularExpression', value: GOOD } })], services: [service(80)] },
    ];
    for (const resources of rounds) {
      const result = translate(resources, options);
      const status = result.status.httpRoutes;
      expect(status.get('default/huge')!.parents[0]!.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
      expect(status.get('default/big')!.parents[0]!.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'False', reason: 'UnsupportedValue' });
      expect(status.get('default/good')!.parents[0]!.conditions.find((c) => c.type === 'Accepted')).toMatchObject({ status: 'True' });
      for (const snapshot of result.snapshots.values()) expect(checkSnapshot(snapshot)).toBeUndefined();
    }
    const compiled = compile.mock.calls.map(([pattern]) => pattern);
    expect(compiled.filter((p) => p === GOOD)).toHaveLength(1);
    expect(compiled.filter((p) => p === OVER_PROGRAM)).toHaveLength(1);
    expect(compiled).not.toContain(HUGE);
  });
});
