// The headers and query parameters a snapshot's policies read credentials from that the fixed
// redaction list (@tollgate/api secret.ts) does not name: an apiKey read from `x-team-key` or
// `?team_key=`, a jwt from `x-my-token`. Traces and /debug/tasks redact them too, on every
// route, since a trace shows a request before its route (and so its policy) is known.
import type { CredentialLocationIR, ExtraCredentials, PolicyIR, ListedPolicies } from '@tollgate/api';

function add(out: { headers: Set<string>; query: Set<string> }, locations: readonly CredentialLocationIR[]): void {
  for (const l of locations) {
    if (l.type === 'Header') out.headers.add(l.name.toLowerCase());
    else if (l.type === 'Query') out.query.add(l.name.toLowerCase());
  }
}

/** Of the policies a snapshot lists (ListedPolicies, @tollgate/api). */
export function credentialNames(policies: ListedPolicies): ExtraCredentials {
  const out = { headers: new Set<string>(), query: new Set<string>() };
  const visit = (p: PolicyIR) => {
    if (p.apiKey) add(out, p.apiKey.keyFrom);
    for (const provider of p.jwt?.providers ?? []) add(out, provider.tokenFrom);
  };
  for (const p of policies.gateway) visit(p);
  for (const p of policies.route) visit(p);
  return out;
}
