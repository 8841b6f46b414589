// The cors, csrf and directResponse kinds of a `traffic` policy together: their checks (beyond
// the schema, for files and for objects the API server did not check) and their conversion to
// the IR, for both modes (a standalone config and a GatewayPolicy convert the same way).
import type { TrafficPolicy } from '../schema/traffic-policy.js';
import { joinPath, type Problem } from '../validation-error.js';
import { checkCors, toCorsIR, type CorsIR } from './cors-ir.js';
import { checkCsrf, toCsrfIR, type CsrfIR } from './csrf-ir.js';
import { checkDirectResponse, toDirectResponseIR, type DirectResponseIR } from './direct-response-ir.js';
import type { ExtProcIR } from './ext-proc.js';

/** One key per kind; null where the policy does not set it. */
export interface TrafficKindsIR {
  readonly cors: CorsIR | null;
  readonly csrf: CsrfIR | null;
  readonly directResponse: DirectResponseIR | null;
  /** Converted by toPolicy (standalone.ts), which has the PolicySources its service needs; null here. */
  readonly extProc: ExtProcIR | null;
}

export const NO_TRAFFIC_KINDS: TrafficKindsIR = { cors: null, csrf: null, directResponse: null, extProc: null };

export function checkTrafficKinds(policy: TrafficPolicy | undefined, path: string, out: Problem[]): void {
  if (policy?.cors) checkCors(policy.cors, joinPath(path, 'cors'), 'policy', out);
  if (policy?.csrf) checkCsrf(policy.csrf, joinPath(path, 'csrf'), out);
  if (policy?.directResponse) checkDirectResponse(policy.directResponse, joinPath(path, 'directResponse'), out);
}

/** NO_TRAFFIC_KINDS (the same object) when the policy sets none of them; a kind with a problem converts to null. */
export function toTrafficKindsIR(traffic: TrafficPolicy | undefined, at: string, problems: Problem[]): TrafficKindsIR {
  if (!traffic?.cors && !traffic?.csrf && !traffic?.directResponse) return NO_TRAFFIC_KINDS;
  const before = problems.length;
  checkTrafficKinds(traffic, at, problems);
  if (problems.length > before) return NO_TRAFFIC_KINDS;
  return {
    cors: traffic.cors ? toCorsIR(traffic.cors) : null,
    csrf: traffic.csrf ? toCsrfIR(traffic.csrf) : null,
    directResponse: traffic.directResponse ? toDirectResponseIR(traffic.directResponse) : null,
    extProc: null,
  };
}
