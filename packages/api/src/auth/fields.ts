// The authentication kinds as fields of `traffic` (GatewayPolicy spec.traffic and the
// standalone `policies.traffic`), each named as the effective policy names it.
import { Type } from '@sinclair/typebox';
import { ApiKeyConfig } from './api-key.js';
import { AuthorizationConfig } from './authorization.js';
import { BasicAuthConfig } from './basic-auth.js';
import { ExtAuthzConfig } from './ext-authz.js';
import { JwtConfig } from './jwt.js';
import { OidcConfig } from './oidc.js';

export const AUTH_KINDS = ['apiKey', 'basicAuth', 'jwt', 'oidc', 'authorization', 'extAuthz'] as const;
export type AuthKind = (typeof AUTH_KINDS)[number];

/**
 * Why a check of the proxy refused: the `reason` label of tollgate_auth_decisions_total, hence
 * a fixed set (never a user name, a rule's text or a service's answer: labels stay bounded).
 * docs/authentication.md, "What an operator sees", says what each means.
 */
export const AUTH_REASONS = [
  /** No credential where the kind reads it. */
  'missing',
  /** A credential that is not one of the kind's (wrong key, password, signature, malformed token). */
  'invalid',
  /** A token past its expiry or before its start, beyond the allowed clock skew. */
  'expired',
  /** A credential naming something the kind does not know (a user, a key id). */
  'unknown',
  /** Credentials in more than one place the kind reads. */
  'ambiguous',
  /** A credential, or an input a rule reads, over its bound (431). */
  'too_large',
  /** A Deny rule was true; an authorization service refused. */
  'denied',
  /** Allow rules exist and none was true. */
  'not_allowed',
  /** A rule could not be evaluated: refused (fail closed). */
  'error',
  /** An authorization service could not decide in time or answered garbage (FailClosed). */
  'unavailable',
  /** A credential that cannot be parsed (bad base64, an empty Bearer, a token that is not a JWT). */
  'malformed',
  /** apiKey: a key of no consumer. */
  'unknown_key',
  /** basicAuth: a user the htpasswd content does not have. */
  'unknown_user',
  /** basicAuth: a known user with another password. */
  'wrong_password',
  /** basicAuth: every password worker busy and its queue full (503). */
  'busy',
  /** extAuthz: the service did not answer within its timeout (FailClosed). */
  'timeout',
  /** extAuthz: the service answered something that is not a valid decision (FailClosed). */
  'bad_response',
  /** A body over what reads it (413): extAuthz's withBody.maxBytes; config.maxRequestBodyBytes where authorization rules read the model. */
  'body_too_large',
  /** jwt: a token before its nbf, beyond the allowed clock skew. */
  'not_yet_valid',
  /** jwt: a signature that does not verify with the provider's keys. */
  'bad_signature',
  /** jwt: an iss other than the provider's issuer. */
  'bad_issuer',
  /** jwt: no aud among the provider's audiences. */
  'bad_audience',
  /** jwt: an alg not allowed (none, HMAC) or not matching the key. */
  'bad_algorithm',
  /** jwt: the provider's key set could not be fetched and none is cached. */
  'keys_unavailable',
  /** oidc: a browser without a session sent to the provider's login page (302). */
  'login',
  /** oidc: the callback answered: the session cookie set, the browser sent back (302). */
  'logged_in',
  /** oidc: the logout path answered: the session cookie cleared (302). */
  'logged_out',
  /** oidc: a callback whose state is not the one the login cookie holds (or no login cookie). */
  'bad_state',
  /** oidc: an ID token whose nonce is not the login's. */
  'bad_nonce',
  /** oidc: the provider refused the code or the refresh token (a replayed or expired code). */
  'grant_refused',
] as const;

/** Why a check let a request through: it passed, or its authorization service failed with failureMode FailOpen. */
export const AUTH_PASS_REASONS = ['allowed', 'failed_open'] as const;
export type AuthPassReason = (typeof AUTH_PASS_REASONS)[number];
export type AuthReason = (typeof AUTH_REASONS)[number];

export const AUTH_TRAFFIC_FIELDS = {
  apiKey: Type.Optional(ApiKeyConfig),
  basicAuth: Type.Optional(BasicAuthConfig),
  jwt: Type.Optional(JwtConfig),
  oidc: Type.Optional(OidcConfig),
  authorization: Type.Optional(AuthorizationConfig),
  extAuthz: Type.Optional(ExtAuthzConfig),
};
