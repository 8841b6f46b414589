// A snapshot is checked the way a proxy will receive it: encoded for the wire and validated by
// the same schema. One that fails is refused here, so the Gateway keeps its last good one.
import { fromWire, toWire, type ProxySnapshot } from '@tollgate/api';

export function checkSnapshot(snapshot: ProxySnapshot): string | undefined {
  try {
    fromWire(toWire(snapshot), `snapshot of ${snapshot.source.kind === 'controller' ? snapshot.source.gateway : 'gateway'}`);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
