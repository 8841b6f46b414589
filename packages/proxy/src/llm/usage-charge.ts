// What one LLM response is charged to the token limits that admitted its request: the usage
// the backend reported; else an estimate of the prompt and of everything generated (content,
// reasoning, refusals, tool-call arguments: the meter keeps them all), never less than the
// request's reservation (its prompt estimate plus max_tokens). A response whose usage cannot
// be known (a backend that reports none, a stream cut short, a compressed body too large to
// read) is charged at least what its request was admitted for, so it cannot spend more than
// its budget saw by hiding its usage.
import type { Logger } from 'pino';
import type { TokenSource } from '../metrics/metrics.js';
import { tokenReservation } from '../ratelimit/reservation.js';
import { estimateTokens } from './estimate.js';
import type { LlmRequest } from './request-body.js';
import type { UsageResult } from './usage-meter.js';

/**
 * The tokens to charge: a number when known now; a promise only while the tokenizer loads
 * (the process's first estimate). Reported when `usage.reported` is set, estimated otherwise.
 */
export function usageCharge(llm: LlmRequest | null, usage: UsageResult, log: Logger): number | Promise<number> {
  if (usage.reported !== null) return usage.reported;
  const floor = tokenReservation(llm);
  const extra = Math.ceil(usage.extraCompletionChars / 4);
  const prompt = llm?.promptText ?? '';
  const estimate = estimateTokens(prompt, usage.completionText);
  if (typeof estimate === 'number') return Math.max(floor, estimate + extra);
  return estimate.then(
    (n) => Math.max(floor, n + extra),
    (err: unknown) => {
      // The tokenizer ships with the proxy, so this is a broken install; the response is still
      // charged, by the same bytes-per-token rule the reservation uses.
      log.error({ err }, 'tokenizer failed to load; tokens estimated from the text length');
      return Math.max(floor, tokenReservation({ promptText: prompt + usage.completionText, maxTokens: null }) + extra);
    },
  );
}

export function chargeSource(usage: UsageResult): TokenSource {
  return usage.reported !== null ? 'reported' : 'estimated';
}
