// jwt (pending: this kind's check).
import type { JwtIR } from '@tollgate/api';
import type { AuthCheck } from './types.js';

export function compileJwt(_ir: JwtIR, _deps: unknown): AuthCheck {
  throw new Error('jwt is not supported yet');
}
