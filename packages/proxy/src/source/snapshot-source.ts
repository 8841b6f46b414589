// Where a proxy's routing config comes from. A source delivers validated ProxySnapshots to one
// apply path (the runtime's atomic swap) and learns from that call whether each snapshot now
// serves or was refused, so it can record or report the outcome (a file source logs it; a
// controller stream acknowledges or rejects the version it was sent). Process settings
// (`config.*`: addresses, timeouts, log level) are not a source's business: they are read
// once at start-up from the config file.
import type { ProxySnapshot } from '@tollgate/api';

/** The apply path a source feeds. */
export interface SnapshotSink {
  /**
   * Swaps `snapshot` in. Resolves once it serves; rejects with the reason when the runtime
   * refuses it (a port that cannot be bound, a policy that does not compile), in which case
   * the snapshot serving before keeps serving.
   */
  apply(snapshot: ProxySnapshot): Promise<void>;
}

/** What a source reports in /debug/tasks. */
export interface SnapshotSourceState {
  /** `file`, later `controller`. */
  readonly kind: string;
  /** Snapshots applied since start, the first included. */
  readonly applied: number;
  /** Snapshots (or config texts) refused since start. */
  readonly refused: number;
  /** Why the last one was refused, until one is applied again. */
  readonly lastError: string | null;
  /** Version of the last snapshot the source had applied. */
  readonly version: string | null;
  readonly [detail: string]: unknown;
}

export interface SnapshotSource {
  /** Name of the background task in /debug/tasks. */
  readonly name: string;
  /**
   * Starts delivering snapshots to `sink`. Resolves once the source is running; a source
   * that has a snapshot at hand (a file) applies it before resolving and rejects when it is
   * refused, so that a proxy never starts on a config it cannot serve.
   */
  start(sink: SnapshotSink): Promise<void>;
  /** Stops delivering; a snapshot being applied finishes. */
  stop(): void;
  state(): SnapshotSourceState;
}
