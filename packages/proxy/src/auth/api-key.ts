// apiKey: the caller presents a key in one of the places the policy names; its SHA-256 is
// looked up among the consumers' digests (the proxy holds digests only, never a key, so no
// dump can print one and the lookup compares digests, which a caller cannot choose). A known
// key makes its consumer the request's; the key is taken out of the request before it is
// forwarded. Refusals are 401 with a Bearer challenge (RFC 6750) when the key may come as a
// Bearer credential, an `ApiKey` one otherwise (docs/authentication.md, "apiKey").
import { hash } from 'node:crypto';
import { API_KEY_BOUNDS, type ApiKeyIR } from '@tollgate/api';
import { ERRORS } from '../errors.js';
import { describeLocation, headerNames, readCredential } from './credential-reader.js';
import type { AuthCheck, AuthDenial, AuthReason, AuthVerdict, Consumer } from './types.js';

export const API_KEY_REALM = 'tollgate';

/** Needs nothing of AuthDeps: the digests are all it compares. */
export function compileApiKey(ir: ApiKeyIR): AuthCheck {
  const consumers = new Map<string, { readonly consumer: Consumer; readonly note: string }>();
  for (const c of ir.consumers) {
    consumers.set(c.digest.reveal(), { consumer: { name: c.consumer, group: c.group, labels: c.labels, claims: null, via: 'apiKey', credentialId: c.id }, note: `key ${c.id} of ${c.consumer}` });
  }
  const names = headerNames(ir.keyFrom);
  const places = ir.keyFrom.map(describeLocation).join(', ');
  const bearer = ir.keyFrom.some((l) => l.type === 'Bearer');
  const challenge = (error?: 'invalid_request' | 'invalid_token') => `${bearer ? 'Bearer' : 'ApiKey'} realm="${API_KEY_REALM}"${error ? `, error="${error}"` : ''}`;
  const deny = (reason: AuthReason, detail: string, error?: 'invalid_request' | 'invalid_token'): AuthDenial => ({ ok: false, error: ERRORS.unauthenticated, reason, detail, challenge: challenge(error) });
  const missing = deny('missing', `no API key; send it in one of: ${places}`);
  const unknown = deny('unknown_key', 'the API key is not valid', 'invalid_token');

  return {
    kind: 'apiKey',
    needsBody: false,
    run(req): AuthVerdict {
      const read = readCredential(req, ir.keyFrom, names);
      if (read.found === 'none') return missing;
      if (read.found === 'refused') return deny(read.reason, read.detail, 'invalid_request');
      const key = read.value;
      // No key of another length was accepted: not worth a hash.
      if (key.length < API_KEY_BOUNDS.minKeyLength || key.length > API_KEY_BOUNDS.maxKeyLength) return unknown;
      // One-shot hash: no Hash object per request.
      const known = consumers.get(hash('sha256', key, 'hex'));
      if (!known) return unknown;
      return { ok: true, consumer: known.consumer, ...read.strip, note: known.note };
    },
  };
}
