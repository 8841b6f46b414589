// basicAuth (pending: this kind's check).
import type { BasicAuthIR } from '@tollgate/api';
import type { AuthDeps } from './deps.js';
import type { AuthCheck } from './types.js';

export function compileBasicAuth(_ir: BasicAuthIR, _deps: AuthDeps): AuthCheck {
  throw new Error('basicAuth is not supported yet');
}
