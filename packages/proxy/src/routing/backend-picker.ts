// Weighted choice among a route's backends. Cumulative weights are computed once per
// config; a pick is one random number and a short scan (routes rarely have many backends).
import type { BackendIR } from '@tollgate/api';

export type BackendPicker = () => BackendIR | null;

export function backendPicker(backends: readonly BackendIR[]): BackendPicker {
  const live = backends.filter((b) => b.weight > 0);
  if (!live.length) return () => null;
  if (live.length === 1) {
    const only = live[0]!;
    return () => only;
  }
  const cumulative: number[] = [];
  let total = 0;
  for (const b of live) cumulative.push((total += b.weight));
  return () => {
    const r = Math.random() * total;
    for (let i = 0; i < cumulative.length; i++) if (r < cumulative[i]!) return live[i]!;
    return live[live.length - 1]!;
  };
}
