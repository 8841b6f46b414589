// extAuthz (pending: this kind's check).
import type { ExtAuthzIR } from '@tollgate/api';
import type { AuthDeps } from './deps.js';
import type { AuthCheck } from './types.js';

export function compileExtAuthz(_ir: ExtAuthzIR, _deps: AuthDeps): AuthCheck {
  throw new Error('extAuthz is not supported yet');
}
