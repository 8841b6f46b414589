// The effectivePolicy of a policySelection event: one key per policy kind (spec §2.4), null
// when the kind does not apply, otherwise the attachments that apply, each with its level.
// Route filters are policies of the route; gateway-level policies come from the listener.
// Rate limits of both levels apply; an authentication kind set at the route replaces the
// Gateway's (auth/effective.ts), so it has one attachment, summarized (auth/summary.ts); so
// do cors, csrf and directResponse, and a route's CORS filter replaces a cors policy.
import { AUTH_KINDS, EFFECTIVE_POLICY_KEYS, type DirectResponseIR, type EffectivePolicy, type FilterIR, type ListenerIR, type PolicyAttachment, type PolicyIR, type RouteIR } from '@tollgate/api';
import { summarizeAuth } from '../auth/summary.js';

const FILTER_KEY = {
  RequestHeaderModifier: 'requestHeaderModifier',
  ResponseHeaderModifier: 'responseHeaderModifier',
  RequestRedirect: 'requestRedirect',
  URLRewrite: 'urlRewrite',
} as const satisfies Record<Exclude<FilterIR['type'], 'RequestMirror' | 'CORS'>, keyof EffectivePolicy>;

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

/** A direct response without its body (up to 64 KiB): its type and size. */
export function directResponseSummary(ir: DirectResponseIR) {
  return { status: ir.status, headers: ir.headers, body: ir.body && { contentType: ir.body.contentType, bytes: Buffer.byteLength(ir.body.text) } };
}

/** The one cors, csrf and directResponse that apply: the route's over the Gateway's; the route's CORS filter over both. */
function addTrafficKinds(out: EffectivePolicy, listener: PolicyIR | null, route: RouteIR): void {
  const pick = <K extends 'cors' | 'csrf' | 'directResponse'>(kind: K) => {
    const own = route.policy?.[kind];
    const inherited = listener?.[kind];
    return own ? { source: 'route' as const, ir: own } : inherited ? { source: 'gateway' as const, ir: inherited } : null;
  };
  const filter = route.filters.find((f) => f.type === 'CORS');
  if (filter) {
    const { type, ...config } = filter;
    out.cors = [{ source: 'route', config: { via: `${type} filter`, ...config } }];
  } else {
    const cors = pick('cors');
    if (cors) out.cors = [{ source: cors.source, config: { via: 'policy', ...cors.ir } }];
  }
  const csrf = pick('csrf');
  if (csrf) out.csrf = [{ source: csrf.source, config: csrf.ir }];
  const direct = pick('directResponse');
  if (direct) out.directResponse = [{ source: direct.source, config: directResponseSummary(direct.ir) }];
  // The route's extProc replaces the Gateway's (routing/compile.ts); it holds no secret.
  const own = route.policy?.extProc;
  const inherited = listener?.extProc;
  if (own) out.extProc = [{ source: 'route', config: own }];
  else if (inherited) out.extProc = [{ source: 'gateway', config: inherited }];
}

export function effectivePolicy(listener: ListenerIR, route: RouteIR | null): EffectivePolicy {
  const out = Object.fromEntries(EFFECTIVE_POLICY_KEYS.map((k) => [k, null])) as EffectivePolicy;
  addPolicy(out, listener.policy, 'gateway');
  if (route) {
    addPolicy(out, route.policy, 'route');
    addAuth(out, listener.policy, route.policy);
    addTransformation(out, listener.policy, route.policy);
    addTrafficKinds(out, listener.policy, route);
    for (const f of route.filters) {
      // The trace interface has no effectivePolicy key for mirrors (they do not change the request); CORS is above.
      if (f.type === 'RequestMirror' || f.type === 'CORS') continue;
      const { type, ...config } = f;
      (out[FILTER_KEY[type]] ??= []).push({ source: 'route', config });
    }
  }
  return out;
}
