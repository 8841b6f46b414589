// The headers and query parameters a snapshot's authentication policies read credentials from
// (API keys, tokens), beyond the fixed redaction list of @tollgate/api: traces and the live
// request list redact them too, so a token read from `x-my-token` is as hidden as one in
// Authorization. Bearer credentials and cookies are on the fixed list already.
import type { CredentialNames, PolicyIR, ProxySnapshot } from '@tollgate/api';

type Location = { readonly type: string; readonly name?: string };

export function credentialNames(ir: ProxySnapshot): CredentialNames {
  const headers = new Set<string>();
  const query = new Set<string>();
  const add = (locations: readonly Location[]) => {
    for (const l of locations) {
      if (l.type === 'Header' && l.name) headers.add(l.name.toLowerCase());
      else if (l.type === 'Query' && l.name) query.add(l.name.toLowerCase());
    }
  };
  const visit = (p: PolicyIR | null) => {
    if (!p) return;
    if (p.apiKey) add(p.apiKey.keyFrom);
    for (const provider of p.jwt?.providers ?? []) add(provider.tokenFrom);
  };
  for (const bind of ir.binds) {
    for (const listener of bind.listeners) {
      visit(listener.policy);
      for (const route of listener.routes) visit(route.policy);
    }
  }
  return { headers, query };
}
