// translate(): Gateway API and GatewayPolicy objects in, per-Gateway proxy snapshots and
// desired status out. Pure, synchronous and deterministic; see ./types.ts for the contract.
import { buildContext } from './context.js';
import { gatewayStatus, translateGateways } from './gateway.js';
import { translateGatewayClasses } from './gatewayclass.js';
import { translateGatewayPolicies } from './gatewaypolicy.js';
import { translateHTTPRoutes } from './httproute.js';
import { compareStrings } from './keys.js';
import { buildSnapshots } from './snapshot.js';
import type { Resources, TranslateOptions, TranslateResult } from './types.js';

export type * from './types.js';

export function translate(resources: Resources, options: TranslateOptions): TranslateResult {
  const ctx = buildContext(resources, options);
  const classes = translateGatewayClasses(resources.gatewayClasses, ctx);
  const gateways = translateGateways(ctx, classes.ours);
  const routes = translateHTTPRoutes(ctx, gateways);
  const policies = translateGatewayPolicies(resources.gatewayPolicies, ctx, gateways, new Map(routes.map((r) => [r.key, r])));
  const snapshots = buildSnapshots(gateways, routes, policies.applied);
  return {
    snapshots,
    status: {
      gatewayClasses: classes.status,
      gateways: new Map([...gateways].map(([key, g]) => [key, gatewayStatus(g)])),
      httpRoutes: new Map(routes.map((r) => [r.key, r.status] as const).sort(([a], [b]) => compareStrings(a, b))),
      gatewayPolicies: policies.status,
    },
  };
}
