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

/**
 * The record's fields alone, so that the state reads them at constant offsets (as fast as
 * fields of its own). An own record is used as is: a subarray would move its bytes off the heap.
 */
export function fieldsOf(record: StateRecord, slots: number): Float64Array {
  const { f64, at } = record;
  return at === 0 && f64.length === slots ? f64 : f64.subarray(at, at + slots);
}
