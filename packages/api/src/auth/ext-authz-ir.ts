// ExtAuthzConfig to ExtAuthzIR (pending: this kind's conversion).
import type { Problem } from '../validation-error.js';
import type { ExtAuthzConfig, ExtAuthzIR } from './ext-authz.js';
import type { PolicySources } from './sources.js';

export type { ExtAuthzIR };

export function toExtAuthzIR(_config: ExtAuthzConfig, at: string, _sources: PolicySources, problems: Problem[]): ExtAuthzIR | null {
  problems.push({ path: at, message: 'is not supported yet' });
  return null;
}
