// basicAuth: HTTP Basic credentials (RFC 7617) checked against the users of htpasswd content.
// The hash is verified in the password workers (password-pool.ts), never on the event loop,
// and a verified credential is remembered (password-verifier.ts), so a client sending the same
// credentials costs one HMAC. Refusals are 401 with `Basic realm="<realm>", charset="UTF-8"`;
// a full verification queue is 503 TG_AUTH_BUSY with Retry-After (docs/authentication.md,
// "basicAuth"). The Authorization header is removed before the request is forwarded.
import type { BasicAuthIR } from '@tollgate/api';
import { ERRORS } from '../errors.js';
import { headerValues } from './credential-reader.js';
import type { HashScheme } from './password-hashes.js';
import type { VerifyOutcome } from './password-pool.js';
import type { PasswordVerifier } from './password-verifier.js';
import type { AuthCheck, AuthDenial, AuthPass, AuthReason, AuthVerdict } from './types.js';

/** Longest base64 of `user:password` read: 253 characters of user name and a long password. */
export const MAX_BASIC_CREDENTIALS_LENGTH = 4096;

const AUTHORIZATION: ReadonlySet<string> = new Set(['authorization']);
const BASIC = /^basic(?:[ \t]+(.*))?$/is;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

interface User {
  readonly scheme: HashScheme;
  readonly hash: string;
  readonly pass: AuthPass;
}

/** `deps` is the part of AuthDeps it uses (compilers.ts passes the whole). */
export function compileBasicAuth(ir: BasicAuthIR, deps: { readonly passwords: PasswordVerifier }): AuthCheck {
  const users = new Map<string, User>();
  for (const u of ir.users) {
    const consumer = { name: u.user, group: null, labels: {}, claims: null, via: 'basicAuth', credentialId: u.user } as const;
    users.set(u.user, { scheme: u.scheme, hash: u.hash.reveal(), pass: { ok: true, consumer, removeHeaders: ['authorization'], note: `user ${u.user}` } });
  }
  // The realm was checked when the config was read; a snapshot from elsewhere cannot break the header.
  const challenge = `Basic realm="${ir.realm.replace(/["\\\p{Cc}]/gu, '')}", charset="UTF-8"`;
  const deny = (reason: AuthReason, detail: string): AuthDenial => ({ ok: false, error: ERRORS.unauthenticated, reason, detail, challenge });
  const missing = deny('missing', 'no Basic credentials: send Authorization: Basic <base64 of user:password>');
  const invalid = (reason: 'unknown_user' | 'wrong_password') => deny(reason, 'the user name or password is not valid');
  const unknownUser = invalid('unknown_user');
  const wrongPassword = invalid('wrong_password');
  const busy: AuthDenial = { ok: false, error: ERRORS.authBusy, reason: 'busy', detail: 'too many password verifications are waiting', headers: { 'retry-after': '1' } };
  const failed: AuthDenial = { ...busy, reason: 'unavailable', detail: 'the password could not be verified' };
  const answer = (user: User, outcome: VerifyOutcome): AuthVerdict => (outcome === 'match' ? user.pass : outcome === 'mismatch' ? wrongPassword : outcome === 'busy' ? busy : failed);

  return {
    kind: 'basicAuth',
    needsBody: false,
    run(req) {
      const values = headerValues(req.rawHeaders, AUTHORIZATION).get('authorization');
      if (!values) return missing;
      if (values.length > 1) return deny('ambiguous', `the Authorization header is sent ${values.length} times; send it once`);
      const m = BASIC.exec(values[0]!);
      if (!m) return deny('missing', 'no Basic credentials: the Authorization header holds another scheme');
      const token = (m[1] ?? '').trim();
      if (token === '') return deny('malformed', 'the Authorization header says Basic but carries no credentials');
      if (token.length > MAX_BASIC_CREDENTIALS_LENGTH) return deny('malformed', `the Basic credentials are longer than ${MAX_BASIC_CREDENTIALS_LENGTH} characters`);
      if (!BASE64.test(token)) return deny('malformed', 'the Basic credentials are not base64 (RFC 7617: base64 of user:password, padded)');
      let text: string;
      try {
        text = utf8.decode(Buffer.from(token, 'base64'));
      } catch {
        return deny('malformed', 'the Basic credentials are not UTF-8 text');
      }
      const colon = text.indexOf(':');
      if (colon < 0) return deny('malformed', 'the Basic credentials have no ":" between user and password');
      const user = users.get(text.slice(0, colon));
      if (!user) return unknownUser;
      const checked = deps.passwords.check(text.slice(0, colon), text.slice(colon + 1), user.scheme, user.hash);
      return checked === 'cached' ? user.pass : checked.then((outcome) => answer(user, outcome));
    },
  };
}
