// A snapshot is checked the way a proxy will receive it: each route through its wire text and
// the same schema, the rest of the snapshot as a whole. One that fails is refused here, so the
// Gateway keeps its last good one. Routes already found valid are not checked again (by
// identity: the translator reuses the objects of unchanged routes), and a list that replaced
// one of the Gateway's stored snapshot is walked only where the two differ, so a change costs
// the routes it touched, not the size of the Gateway.
import { snapshotProblems, ValidationError, type ProxySnapshot } from '@tollgate/api';

export function checkSnapshot(snapshot: ProxySnapshot, previous?: ProxySnapshot): string | undefined {
  const problems = snapshotProblems(snapshot, previous);
  if (!problems.length) return undefined;
  return new ValidationError(`snapshot of ${snapshot.source.kind === 'controller' ? snapshot.source.gateway : 'gateway'}`, problems).message;
}
