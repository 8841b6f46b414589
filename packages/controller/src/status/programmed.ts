// Programmed from what the proxies show. Translation can only say Pending (nothing it reads
// proves a proxy applied anything); where it does, the writer puts the verdict drawn from the
// proxy pods and the snapshot stream's ACKs instead, on the Gateway and on each listener that
// translation left Pending. An Invalid (not accepted, a refused snapshot) stays as it is.
import type { ProgrammedVerdict } from '../deployer/programmed.js';
import type { DesiredCondition, GatewayStatusReport } from '../translate/types.js';

function apply(c: DesiredCondition, v: ProgrammedVerdict): DesiredCondition {
  if (c.type !== 'Programmed' || c.status !== 'False' || c.reason !== 'Pending') return c;
  return { ...c, status: v.status ? 'True' : 'False', reason: v.reason, message: v.message };
}

export function withProgrammed(g: GatewayStatusReport, v: ProgrammedVerdict | undefined): GatewayStatusReport {
  if (!v) return g;
  return {
    ...g,
    conditions: g.conditions.map((c) => apply(c, v)),
    listeners: g.listeners.map((l) => ({ ...l, conditions: l.conditions.map((c) => apply(c, v)) })),
  };
}
