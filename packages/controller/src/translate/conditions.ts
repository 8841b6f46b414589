// Building the conditions of a status report. Every condition carries the generation of the
// object it was computed from; the status writer adds lastTransitionTime.
import type { DesiredCondition } from './types.js';

export type ConditionStatus = DesiredCondition['status'];

export function condition(type: string, status: ConditionStatus | boolean, reason: string, message: string, observedGeneration: number): DesiredCondition {
  return { type, status: status === true ? 'True' : status === false ? 'False' : status, reason, message, observedGeneration };
}

/** A reason and message that decide one condition, before the generation is known. */
export interface Verdict {
  readonly ok: boolean;
  readonly reason: string;
  readonly message: string;
}

export const ok = (reason: string, message: string): Verdict => ({ ok: true, reason, message });
export const fail = (reason: string, message: string): Verdict => ({ ok: false, reason, message });

/**
 * Accepted from the verdict, and Programmed: False/Pending while accepted (the status writer
 * puts the verdict of the proxies there), else False with `refused` (default: the verdict's reason).
 */
export function acceptedAndProgrammed(v: Verdict, gen: number, refused: string = v.reason): DesiredCondition[] {
  return [
    condition('Accepted', v.ok, v.reason, v.message, gen),
    v.ok
      ? condition('Programmed', false, 'Pending', 'waiting for a proxy of the Gateway to apply its configuration', gen)
      : condition('Programmed', false, refused, `not programmed: ${v.message}`, gen),
  ];
}
