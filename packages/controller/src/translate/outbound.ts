// Outbound targets: services a GatewayPolicy makes the Gateway's proxies call on its behalf
// (the rate limit service; every later one a policy names, such as a JWKS, an external
// authorization or processing service, an OIDC issuer or a provider, goes through here too).
// The proxies are shared by every tenant whose routes attach to the Gateway, so in a cluster
// a policy names an outbound target by backendRef only, never by host: a host would let the
// author of any policy make the shared proxies dial any address and port. A backendRef names
// an object of the cluster whose owner decided to serve there:
// - its kind must be one this table resolves (a core Service today; a new kind, such as a
//   Tollgate Backend, is one more entry of KINDS);
// - another namespace needs a ReferenceGrant there that allows GatewayPolicies of the
//   policy's namespace (for that object, or for every one of its kind);
// - a Service of type ExternalName is refused: it is a DNS alias that anyone who may create a
//   Service could point at any host outside the cluster.
// docs/security.md, "Tenants", states the rule.
import type { Problem } from '@tollgate/api';
import { serviceEndpoints, serviceHost } from './backendrefs.js';
import type { Context } from './context.js';
import { grantNeeded, type ReferenceFrom } from './referencegrant.js';

/** A backendRef as a policy writes it (group and kind default to a core Service). */
export interface OutboundRef {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
  readonly port: number;
}

/** The field of a policy that names an outbound target: `host` (standalone only) or `backendRef`. */
export interface OutboundField {
  readonly host?: string;
  readonly backendRef?: OutboundRef;
}

/** An outbound target resolved to what the proxies dial, with what the status reports of it. */
export interface OutboundTarget {
  /** `<host>:<port>` the proxies dial. */
  readonly address: string;
  /** `<group>/<kind> <namespace>/<name>` for status messages, e.g. `Service limits/rls`. */
  readonly object: string;
  /** Ready endpoints behind it now (the ServicesAvailable condition). */
  readonly readyEndpoints: number;
}

/** A refusal's `reason` is the policy's Accepted reason: RefNotPermitted for a missing ReferenceGrant, Invalid otherwise. */
export type OutboundResolution = { readonly ok: true; readonly target: OutboundTarget } | { readonly ok: false; readonly reason: 'Invalid' | 'RefNotPermitted'; readonly problem: Problem };

type KindResolver = (ref: OutboundRef, namespace: string, path: string, ctx: Context) => OutboundResolution;

const refused = (path: string, message: string, reason: 'Invalid' | 'RefNotPermitted' = 'Invalid'): OutboundResolution => ({ ok: false, reason, problem: { path, message } });

function resolveService(ref: OutboundRef, namespace: string, path: string, ctx: Context): OutboundResolution {
  const svc = ctx.services.get(`${namespace}/${ref.name}`);
  const object = `Service ${namespace}/${ref.name}`;
  if (!svc) return refused(path, `${object} does not exist; create it or fix the name`);
  if (svc.spec?.type === 'ExternalName')
    return refused(path, `${object} is of type ExternalName, an alias of a host outside the cluster; name a Service whose endpoints are in the cluster`);
  const port = (svc.spec?.ports ?? []).find((p) => p.port === ref.port);
  if (!port) return refused(`${path}.port`, `${object} has no port ${ref.port}`);
  return { ok: true, target: { address: serviceHost(ref.name, namespace, ref.port), object, readyEndpoints: serviceEndpoints(ctx, namespace, ref.name, port).length } };
}

/** Kinds an outbound backendRef may name, by `<group>/<kind>`. */
const KINDS: ReadonlyMap<string, KindResolver> = new Map([['/Service', resolveService]]);

const SUPPORTED = 'a Service (group "", kind Service)';

/**
 * Resolves the outbound target `field` (at `path`, e.g. `spec.traffic.rateLimit.global.service`)
 * of a policy of `from`. In a cluster: `backendRef` only, as the file comment says; a refusal
 * names the field and what to write instead.
 */
export function resolveOutbound(field: OutboundField, path: string, from: ReferenceFrom, ctx: Context): OutboundResolution {
  if (field.host !== undefined)
    return refused(
      `${path}.host`,
      `a GatewayPolicy cannot name a host: the Gateway's proxies, shared with other tenants, would dial any address its author chose; name ${SUPPORTED} with backendRef (a ReferenceGrant allows one in another namespace)`,
    );
  const ref = field.backendRef;
  if (!ref) return refused(`${path}.backendRef`, `is required; name ${SUPPORTED}`);
  const refPath = `${path}.backendRef`;
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const resolve = KINDS.get(`${group}/${kind}`);
  if (!resolve) return refused(`${refPath}.kind`, `${group ? `${group}/` : ''}${kind} is not a supported kind of outbound target; name ${SUPPORTED}`);
  const namespace = ref.namespace ?? from.namespace;
  if (!ctx.grants.permits(from, { group, kind, namespace, name: ref.name }))
    return refused(refPath, grantNeeded(`${kind} ${namespace}/${ref.name}`, namespace, from), 'RefNotPermitted');
  return resolve(ref, namespace, refPath, ctx);
}
