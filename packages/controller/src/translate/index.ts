// translate(): Gateway API and GatewayPolicy objects in, per-Gateway proxy snapshots and
// desired status out. See ./types.ts for the contract.
import type { Resources, TranslateOptions, TranslateResult } from './types.js';

export type * from './types.js';

export function translate(_resources: Resources, _options: TranslateOptions): TranslateResult {
  throw new Error('translate() is not implemented yet');
}
