// authorization (pending: this kind's check).
import type { AuthorizationIR } from '@tollgate/api';
import type { AuthDeps } from './deps.js';
import type { AuthCheck } from './types.js';

export function compileAuthorization(_ir: AuthorizationIR, _deps: AuthDeps): AuthCheck {
  throw new Error('authorization is not supported yet');
}
