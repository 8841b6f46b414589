// Where a budget's state lives: `slots` float64 fields of a Float64Array from `at`. The array is
// the budget's own in local mode, a view of a SharedArrayBuffer in shared mode (./limit-memory.ts),
// so RequestBucket and TokenWindow are the same classes in both and read their fields the same way.
//
// A token window keeps its reservations and holds per worker thread (one column each), so the
// reservations of a worker that died can be released without touching anyone else's; `worker`
// is this thread's column, `workers` how many columns every record has. Both are fixed when the
// memory is made.
export interface StateRecord {
  readonly f64: Float64Array;
  readonly at: number;
  readonly worker: number;
  readonly workers: number;
}

/** A record of its own, for one thread: what local mode gives each budget. */
export function ownRecord(slots: number): StateRecord {
  return { f64: new Float64Array(slots), at: 0, worker: 0, workers: 1 };
}
