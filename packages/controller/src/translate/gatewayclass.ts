// GatewayClass: the classes naming our controller, and whether we accept them. Gateways of a
// class that is not ours are left alone (no status, no snapshot).
import { condition, fail, ok, type Verdict } from './conditions.js';
import { SUPPORTED_FEATURES } from './features.js';
import { byKey, generationOf } from './keys.js';
import type { Context } from './context.js';
import { classParameters } from '../proxy-settings/parameters.js';
import type { GatewayClass } from '../types/gateway-api.js';
import type { GatewayClassStatusReport } from './types.js';

/** The Gateway API release the controller is built against (major.minor). */
export const SUPPORTED_GATEWAY_API = 'v1.6';

export interface ClassVerdict {
  readonly name: string;
  readonly accepted: Verdict;
  /** Its Gateways' parameters start from the class's. */
  readonly gatewayClass: GatewayClass;
}

export function supportedVersion(installed: string | null): Verdict | null {
  if (installed === null) return null;
  const m = /^v?(\d+)\.(\d+)(\.\d+)?/.exec(installed);
  if (m && `v${m[1]}.${m[2]}` === SUPPORTED_GATEWAY_API) return ok('SupportedVersion', `Gateway API ${installed} is supported`);
  return fail('UnsupportedVersion', `Gateway API ${installed} is installed; this controller supports ${SUPPORTED_GATEWAY_API}.x: install the ${SUPPORTED_GATEWAY_API} CRDs`);
}

export function translateGatewayClasses(
  classes: readonly GatewayClass[],
  ctx: Context,
): { readonly ours: ReadonlyMap<string, ClassVerdict>; readonly status: Map<string, GatewayClassStatusReport> } {
  const ours = new Map<string, ClassVerdict>();
  const status = new Map<string, GatewayClassStatusReport>();
  const version = supportedVersion(ctx.gatewayApiVersion);
  for (const gc of byKey(classes)) {
    if (gc.spec.controllerName !== ctx.controllerName) continue;
    const gen = generationOf(gc.metadata);
    let accepted: Verdict;
    if (version && !version.ok) accepted = version;
    else {
      const params = classParameters(gc, ctx.configMap, ctx.parameters);
      accepted = params.ok ? ok('Accepted', `accepted by ${ctx.controllerName}`) : fail('InvalidParameters', params.message);
    }
    ours.set(gc.metadata.name, { name: gc.metadata.name, accepted, gatewayClass: gc });
    const conditions = [condition('Accepted', accepted.ok, accepted.reason, accepted.message, gen)];
    conditions.push(
      version
        ? condition('SupportedVersion', version.ok, version.reason, version.message, gen)
        : condition('SupportedVersion', 'Unknown', 'Pending', 'the version of the installed Gateway API CRDs is not known yet', gen),
    );
    // Features are a promise about what Gateways of the class get: none while it is not accepted.
    status.set(gc.metadata.name, { name: gc.metadata.name, generation: gen, conditions, supportedFeatures: accepted.ok ? SUPPORTED_FEATURES : [] });
  }
  return { ours, status };
}
