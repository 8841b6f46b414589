// JwtConfig to JwtIR (pending: this kind's conversion).
import type { Problem } from '../validation-error.js';
import type { JwtConfig, JwtIR } from './jwt.js';
import type { PolicySources } from './sources.js';

export type { JwtIR };

export function toJwtIR(_config: JwtConfig, at: string, _sources: PolicySources, problems: Problem[]): JwtIR | null {
  problems.push({ path: at, message: 'is not supported yet' });
  return null;
}
