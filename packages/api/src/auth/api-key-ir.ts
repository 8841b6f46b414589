// ApiKeyConfig to ApiKeyIR (pending: this kind's conversion).
import type { Problem } from '../validation-error.js';
import type { ApiKeyConfig, ApiKeyIR } from './api-key.js';
import type { PolicySources } from './sources.js';

export type { ApiKeyIR };

export function toApiKeyIR(_config: ApiKeyConfig, at: string, _sources: PolicySources, problems: Problem[]): ApiKeyIR | null {
  problems.push({ path: at, message: 'is not supported yet' });
  return null;
}
