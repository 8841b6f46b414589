// BasicAuthConfig to BasicAuthIR (pending: this kind's conversion).
import type { Problem } from '../validation-error.js';
import type { BasicAuthConfig, BasicAuthIR } from './basic-auth.js';
import type { PolicySources } from './sources.js';

export type { BasicAuthIR };

export function toBasicAuthIR(_config: BasicAuthConfig, at: string, _sources: PolicySources, problems: Problem[]): BasicAuthIR | null {
  problems.push({ path: at, message: 'is not supported yet' });
  return null;
}
