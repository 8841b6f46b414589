// The effectivePolicy of a policySelection event: one key per policy kind (spec §2.4), null
// when the kind does not apply, otherwise the attachments that apply, each with its level.
// Route filters are policies of the route; gateway-level policies come from the listener.
// Rate limits of both levels apply; an authentication kind set at the route replaces the
// Gateway's (auth/effective.ts), so it has one attachment, summarized (auth/summary.ts).
import { AUTH_KINDS, EFFECTIVE_POLICY_KEYS, type EffectivePolicy, type FilterIR, type ListenerIR, type PolicyAttachment, type PolicyIR, type RouteIR } from '@tollgate/api';
import { summarizeAuth } from '../auth/summary.js';

const FILTER_KEY = {
  RequestHeaderModifier: 'requestHeaderModifier',
  ResponseHeaderModifier: 'responseHeaderModifier',
  RequestRedirect: 'requestRedirect',
  URLRewrite: 'urlRewrite',
} as const satisfies Record<Exclude<FilterIR['type'], 'RequestMirror'>, keyof EffectivePolicy>;

function addPolicy(out: EffectivePolicy, policy: PolicyIR | null, source: PolicyAttachment['source']): void {
  if (!policy) return;
  for (const key of ['localRateLimit', 'remoteRateLimit'] as const) {
    const config = policy[key];
    if (config) (out[key] ??= []).push({ source, config });
  }
}

function addAuth(out: EffectivePolicy, listener: PolicyIR | null, route: PolicyIR | null): void {
  for (const kind of AUTH_KINDS) {
    const own = route?.[kind];
    const inherited = listener?.[kind];
    if (own) out[kind] = [{ source: 'route', config: summarizeAuth(kind, own) }];
    else if (inherited) out[kind] = [{ source: 'gateway', config: summarizeAuth(kind, inherited) }];
  }
}

/** The route's transformation replaces the Gateway's (transform/compile.ts); its credential-like expressions print redacted (Secrets). */
function addTransformation(out: EffectivePolicy, listener: PolicyIR | null, route: PolicyIR | null): void {
  const own = route?.transformation;
  const inherited = listener?.transformation;
  if (own) out.transformation = [{ source: 'route', config: own }];
  else if (inherited) out.transformation = [{ source: 'gateway', config: inherited }];
}

export function effectivePolicy(listener: ListenerIR, route: RouteIR | null): EffectivePolicy {
  const out = Object.fromEntries(EFFECTIVE_POLICY_KEYS.map((k) => [k, null])) as EffectivePolicy;
  addPolicy(out, listener.policy, 'gateway');
  if (route) {
    addPolicy(out, route.policy, 'route');
    addAuth(out, listener.policy, route.policy);
    addTransformation(out, listener.policy, route.policy);
    for (const f of route.filters) {
      // The trace interface has no effectivePolicy key for mirrors (they do not change the request).
      if (f.type === 'RequestMirror') continue;
      const { type, ...config } = f;
      (out[FILTER_KEY[type]] ??= []).push({ source: 'route', config });
    }
  }
  return out;
}
