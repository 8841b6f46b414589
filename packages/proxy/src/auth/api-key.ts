// apiKey (pending: this kind's check).
import type { ApiKeyIR } from '@tollgate/api';
import type { AuthDeps } from './deps.js';
import type { AuthCheck } from './types.js';

export function compileApiKey(_ir: ApiKeyIR, _deps: AuthDeps): AuthCheck {
  throw new Error('apiKey is not supported yet');
}
