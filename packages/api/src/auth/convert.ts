// The authentication kinds of a `traffic` policy as the proxy runs them: each kind converted
// by its own module, the sources it names read through PolicySources (files standalone,
// Secrets and ConfigMaps in a cluster), every problem named by its JSON path.
import type { TrafficPolicy } from '../schema/traffic-policy.js';
import { joinPath, type Problem } from '../validation-error.js';
import { toApiKeyIR, type ApiKeyIR } from './api-key-ir.js';
import { toAuthorizationIR, type AuthorizationIR } from './authorization-ir.js';
import { toBasicAuthIR, type BasicAuthIR } from './basic-auth-ir.js';
import { toExtAuthzIR, type ExtAuthzIR } from './ext-authz-ir.js';
import { toJwtIR, type JwtIR } from './jwt-ir.js';
import { toOidcIR, type OidcIR } from './oidc-ir.js';
import type { PolicySources } from './sources.js';

/** One key per authentication kind; null where the policy does not set it. */
export interface AuthPolicyIR {
  readonly apiKey: ApiKeyIR | null;
  readonly basicAuth: BasicAuthIR | null;
  readonly jwt: JwtIR | null;
  readonly oidc: OidcIR | null;
  readonly authorization: AuthorizationIR | null;
  readonly extAuthz: ExtAuthzIR | null;
}

export const NO_AUTH: AuthPolicyIR = { apiKey: null, basicAuth: null, jwt: null, oidc: null, authorization: null, extAuthz: null };

/** Problems go to `problems`; a kind with a problem converts to null. */
export function toAuthIR(traffic: TrafficPolicy | undefined, at: string, sources: PolicySources, problems: Problem[]): AuthPolicyIR {
  if (!traffic) return NO_AUTH;
  const { apiKey, basicAuth, jwt, oidc, authorization, extAuthz } = traffic;
  if (!apiKey && !basicAuth && !jwt && !oidc && !authorization && !extAuthz) return NO_AUTH;
  return {
    apiKey: apiKey ? toApiKeyIR(apiKey, joinPath(at, 'apiKey'), sources, problems) : null,
    basicAuth: basicAuth ? toBasicAuthIR(basicAuth, joinPath(at, 'basicAuth'), sources, problems) : null,
    jwt: jwt ? toJwtIR(jwt, joinPath(at, 'jwt'), sources, problems) : null,
    oidc: oidc ? toOidcIR(oidc, joinPath(at, 'oidc'), sources, problems) : null,
    authorization: authorization ? toAuthorizationIR(authorization, joinPath(at, 'authorization'), problems) : null,
    extAuthz: extAuthz ? toExtAuthzIR(extAuthz, joinPath(at, 'extAuthz'), sources, problems) : null,
  };
}
