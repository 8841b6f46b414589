// AuthorizationConfig to AuthorizationIR: rules named (their index when unnamed); the
// expressions were compiled within their cost budget by checkAuthPolicy (rules.ts).
import type { Problem } from '../validation-error.js';
import type { AuthorizationConfig, AuthorizationIR } from './authorization.js';

export type { AuthorizationIR };

export function toAuthorizationIR(config: AuthorizationConfig, _at: string, _problems: Problem[]): AuthorizationIR {
  return { rules: config.rules.map((r, i) => ({ name: r.name ?? String(i), action: r.action, expression: r.expression })) };
}
