// The authentication kinds as fields of `traffic` (GatewayPolicy spec.traffic and the
// standalone `policies.traffic`), each named as the effective policy names it.
import { Type } from '@sinclair/typebox';
import { ApiKeyConfig } from './api-key.js';
import { AuthorizationConfig } from './authorization.js';
import { BasicAuthConfig } from './basic-auth.js';
import { ExtAuthzConfig } from './ext-authz.js';
import { JwtConfig } from './jwt.js';

export const AUTH_KINDS = ['apiKey', 'basicAuth', 'jwt', 'authorization', 'extAuthz'] as const;
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
] as const;
export type AuthReason = (typeof AUTH_REASONS)[number];

export const AUTH_TRAFFIC_FIELDS = {
  apiKey: Type.Optional(ApiKeyConfig),
  basicAuth: Type.Optional(BasicAuthConfig),
  jwt: Type.Optional(JwtConfig),
  authorization: Type.Optional(AuthorizationConfig),
  extAuthz: Type.Optional(ExtAuthzConfig),
};
