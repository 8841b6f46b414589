// What a verified token's claims become: the consumer (name, group, claims for authorization
// rules) and the request headers a provider copies claims to. Every value is bounded as the
// authorization surface declares (cel/surfaces.ts); a claim over the bounds is left out of
// consumer.claims (a rule reading it sees it absent) and of the headers, never cut short.
import { MAX_CLAIM_LENGTH, MAX_CONSUMER_CLAIMS, MAX_CONSUMER_NAME_LENGTH, type JwtProviderIR } from '@tollgate/api';
import type { Consumer } from './types.js';

/** A claim as text: strings as they are, anything else as JSON. */
export function claimText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export interface Claims {
  readonly claims: Readonly<Record<string, string>>;
  /** Claims left out for their size or beyond MAX_CONSUMER_CLAIMS. */
  readonly dropped: number;
}

export function boundedClaims(payload: Readonly<Record<string, unknown>>): Claims {
  const claims: Record<string, string> = {};
  let kept = 0;
  let dropped = 0;
  for (const [name, value] of Object.entries(payload)) {
    const text = claimText(value);
    if (kept >= MAX_CONSUMER_CLAIMS || name.length > MAX_CLAIM_LENGTH || text.length > MAX_CLAIM_LENGTH) {
      dropped++;
      continue;
    }
    claims[name] = text;
    kept++;
  }
  return { claims, dropped };
}

/** The consumer of a verified token, or what is wrong with its consumer or group claim. */
export function consumerOf(provider: JwtProviderIR, payload: Readonly<Record<string, unknown>>, claims: Readonly<Record<string, string>>): Consumer | string {
  const name = nameClaim(payload[provider.consumerClaim]);
  if (name === null) return `the token has no ${provider.consumerClaim} claim naming the consumer (a string of 1 to ${MAX_CONSUMER_NAME_LENGTH} characters, no control characters)`;
  let group: string | null = null;
  if (provider.groupClaim !== null && payload[provider.groupClaim] !== undefined) {
    group = nameClaim(payload[provider.groupClaim]);
    if (group === null) return `the token's ${provider.groupClaim} claim is not a string of 1 to ${MAX_CONSUMER_NAME_LENGTH} characters without control characters`;
  }
  return { name, group, labels: {}, claims, via: 'jwt', credentialId: provider.name };
}

/** A consumer or group name: 1 to 253 characters without control characters (it reaches logs, traces and metrics). */
function nameClaim(v: unknown): string | null {
  const text = typeof v === 'number' && Number.isFinite(v) ? String(v) : v;
  // eslint-disable-next-line no-control-regex
  return typeof text === 'string' && text.length > 0 && text.length <= MAX_CONSUMER_NAME_LENGTH && !/[\x00-\x1f\x7f]/.test(text) ? text : null;
}

/**
 * A claim's value as a header value: UTF-8 sent as its bytes (obs-text), no control
 * characters (a CR or LF would split the header), at most MAX_CLAIM_LENGTH bytes; null when it
 * cannot be one.
 */
export function headerValue(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const bytes = Buffer.from(claimText(value).trim(), 'utf8');
  if (bytes.length === 0 || bytes.length > MAX_CLAIM_LENGTH) return null;
  const text = bytes.toString('latin1');
  // eslint-disable-next-line no-control-regex
  return /[\x00-\x08\x0a-\x1f\x7f]/.test(text) ? null : text;
}
