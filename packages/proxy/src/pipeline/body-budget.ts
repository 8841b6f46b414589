// The process-wide budget of request-body bytes held in memory (config.maxBufferedRequestBytes).
// A body the proxy reads (token counting, global descriptors, mirrors) takes its bytes from
// the budget as they arrive and gives them back when its request ends: bytes no longer
// arriving make room for others. A chunk that does not fit is refused, and its request with it
// (503 TG_BODY_BUDGET_FULL): however many clients send bodies at once, the bytes held stay
// within the budget. A counter, not an allocator: one addition and one comparison per chunk.
//
// This one counts for one thread; worker threads share theirs through SharedBodyBudget
// (./shared-body-budget.ts), which the pipeline uses the same way.

/** What the pipeline asks of a budget, whichever counts the bytes. */
export interface BytesBudget {
  readonly max: number;
  /** Bytes held now. */
  readonly used: number;
  /** Takes `n` bytes; false, taking nothing, when they would go beyond the budget. */
  take(n: number): boolean;
  giveBack(n: number): void;
}

export class BodyBudget implements BytesBudget {
  #used = 0;

  constructor(readonly max: number) {}

  /** Bytes held now (the tollgate_buffered_request_bytes gauge). */
  get used(): number {
    return this.#used;
  }

  /** Takes `n` bytes; false, taking nothing, when they would go beyond the budget. */
  take(n: number): boolean {
    if (this.#used + n > this.max) return false;
    this.#used += n;
    return true;
  }

  giveBack(n: number): void {
    this.#used -= n;
  }
}
