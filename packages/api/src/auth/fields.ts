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

export const AUTH_TRAFFIC_FIELDS = {
  apiKey: Type.Optional(ApiKeyConfig),
  basicAuth: Type.Optional(BasicAuthConfig),
  jwt: Type.Optional(JwtConfig),
  authorization: Type.Optional(AuthorizationConfig),
  extAuthz: Type.Optional(ExtAuthzConfig),
};
