// The route IRs a translated route was last put in the snapshots as: one list per attachment,
// held by the route's memo (./httproute.ts), which lasts exactly while the route object, its
// rules and its attachments are unchanged. The snapshot builder (./snapshot.ts) owns the
// contents and decides when they still hold; a route whose memo is kept costs it one property
// read instead of a lookup per rule.
import type { RouteIR } from '@tollgate/api';

export class SentRoutes {
  /** By attachment index: the route's IRs on that listener (undefined: not made yet). */
  lists: (readonly RouteIR[] | undefined)[] = [];
  /** The number of the snapshot build that last made or confirmed `lists` (see buildSnapshots). */
  confirmed = -1;
}
