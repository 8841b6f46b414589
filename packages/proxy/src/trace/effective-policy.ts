// The effectivePolicy of a policySelection event: one key per policy kind (spec §2.4), null
// when the kind does not apply, otherwise the attachments that apply, each with its level.
// Route filters are policies of the route; gateway-level policies come from the listener.
import { EFFECTIVE_POLICY_KEYS, type EffectivePolicy, type FilterIR, type ListenerIR, type PolicyAttachment, type PolicyIR, type RouteIR } from '@tollgate/api';

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

export function effectivePolicy(listener: ListenerIR, route: RouteIR | null): EffectivePolicy {
  const out = Object.fromEntries(EFFECTIVE_POLICY_KEYS.map((k) => [k, null])) as EffectivePolicy;
  addPolicy(out, listener.policy, 'gateway');
  if (route) {
    addPolicy(out, route.policy, 'route');
    for (const f of route.filters) {
      // The trace interface has no effectivePolicy key for mirrors (they do not change the request).
      if (f.type === 'RequestMirror') continue;
      const { type, ...config } = f;
      (out[FILTER_KEY[type]] ??= []).push({ source: 'route', config });
    }
  }
  return out;
}
