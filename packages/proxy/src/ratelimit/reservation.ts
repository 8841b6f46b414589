// What an LLM request reserves in a token budget when it is admitted: an estimate of its
// prompt plus the completion it may ask for (`max_completion_tokens` / `max_tokens`). The
// estimate is on the request path, so it is a byte count, not a tokenizer run (a tokenizer
// costs about 600 times more per character): the reservation only has to be close, since it is
// replaced by the usage the backend reports once the response completes.

/** Average bytes per token of o200k-style encodings on English text and code. */
export const BYTES_PER_TOKEN = 4;

export interface ReservationInput {
  /** The prompt text (message contents), as parsed from the request body. */
  readonly promptText: string;
  readonly maxTokens: number | null;
}

/** Tokens to reserve; 0 when the request has no LLM body. */
export function tokenReservation(llm: ReservationInput | null): number {
  if (!llm) return 0;
  return Math.ceil(Buffer.byteLength(llm.promptText, 'utf8') / BYTES_PER_TOKEN) + (llm.maxTokens ?? 0);
}
