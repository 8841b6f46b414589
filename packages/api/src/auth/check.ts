// What the schemas of the authentication kinds cannot say: which reference fields each mode
// can resolve (a standalone proxy reads files and dials hosts; a cluster reads Secrets and
// ConfigMaps and reaches Services through backendRefs), and authorization rules that
// type-check within their cost budget.
import { compileCel, inputBounds } from '../cel/compile.js';
import type { EvaluationLimits } from '../limits.js';
import type { TrafficPolicy } from '../schema/traffic-policy.js';
import { joinPath, show, type Problem } from '../validation-error.js';

type Mode = 'standalone' | 'cluster';

/** Reference fields by mode: [path of the object, field] pairs found in a kind's config. */
const CLUSTER_ONLY = new Set(['secretRefs', 'secretSelector', 'secretRef', 'ref', 'backendRef', 'caCertificateRef']);
const STANDALONE_ONLY = new Set(['file', 'host', 'caFile']);

const HINT: Record<string, string> = {
  secretRefs: 'a standalone proxy reads no Secrets; use file: <path>',
  secretSelector: 'a standalone proxy reads no Secrets; use file: <path>',
  secretRef: 'a standalone proxy reads no Secrets; use file: <path>',
  ref: 'a standalone proxy reads no Secrets or ConfigMaps; use file: <path> or inline',
  backendRef: 'a standalone proxy cannot resolve Services; use host: <host>:<port>',
  caCertificateRef: 'a standalone proxy reads no ConfigMaps; use caFile: <path>',
  file: 'a GatewayPolicy cannot read files of the proxy; use a Secret or ConfigMap reference',
  host: 'a GatewayPolicy names outbound targets only through backendRef (a Service), so that a tenant cannot send the proxy to an arbitrary address',
  caFile: 'a GatewayPolicy cannot read files of the proxy; use caCertificateRef',
};

/** Every reference field under `value` that `mode` cannot resolve. */
function wrongMode(value: unknown, path: string, mode: Mode, out: Problem[], depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 8) return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => wrongMode(v, joinPath(path, i), mode, out, depth + 1));
    return;
  }
  const refused = mode === 'standalone' ? CLUSTER_ONLY : STANDALONE_ONLY;
  for (const [k, v] of Object.entries(value)) {
    // `matchLabels` and `labels` are data, not references.
    if (k === 'matchLabels') continue;
    if (refused.has(k)) out.push({ path: joinPath(path, k), message: `is not available in ${mode === 'standalone' ? 'a standalone config' : 'a cluster'}: ${HINT[k]}` });
    else wrongMode(v, joinPath(path, k), mode, out, depth + 1);
  }
}

export function checkAuthPolicy(policy: TrafficPolicy | undefined, path: string, mode: Mode, limits: EvaluationLimits, out: Problem[]): void {
  if (!policy) return;
  // extProc's service is an outbound reference like extAuthz's.
  for (const kind of ['apiKey', 'basicAuth', 'jwt', 'oidc', 'extAuthz', 'extProc'] as const) {
    if (policy[kind]) wrongMode(policy[kind], joinPath(path, kind), mode, out);
  }
  const rules = policy.authorization?.rules;
  if (!rules) return;
  const rulesPath = joinPath(joinPath(path, 'authorization'), 'rules');
  let total = 0;
  const names = new Set<string>();
  rules.forEach((r, i) => {
    const p = joinPath(rulesPath, i);
    if (r.name !== undefined) {
      if (names.has(r.name)) out.push({ path: joinPath(p, 'name'), message: `${show(r.name)} names another rule too; rule names are unique` });
      names.add(r.name);
    }
    const c = compileCel(r.expression, 'authorization', limits);
    if (!c.ok) {
      const example = /^(not a valid|does not type-check)/.test(c.problem) ? '; e.g. consumer.group == "team-a" && llm.model.startsWith("gpt-4o")' : '';
      out.push({ path: joinPath(p, 'expression'), message: `got ${show(r.expression)}: ${c.problem}${example}` });
      return;
    }
    total += c.value.cost;
  });
  if (!(total <= limits.cel.maxCost)) {
    out.push({ path: rulesPath, message: `the rules together have an estimated cost of ${total}, more than the budget of ${limits.cel.maxCost} (cel.maxCost) a request may spend for inputs within the declared bounds (${inputBounds(limits)})` });
  }
}
