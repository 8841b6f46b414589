// The key of a keyed limit (`by`): what one budget is kept per, read from the request. The
// same key gives the same value to a local limit (its table of budgets) and to a global
// descriptor (its first entry), so a consumer's budget is the same key in both.
//
// A request without a value for the key (no consumer, the header absent or empty, a claim the
// token lacks, the expression failing or giving "") gets the empty key: every such request
// shares one budget of the limit's size. Not sending a descriptor (Envoy's way with a missing
// value) or skipping the limit would make dropping the key a way around the limit.
//
// Values are bounded: one longer than MAX_KEY_LENGTH characters is replaced by "#" and its
// SHA-256 (base64url), so a client cannot make the table, or the service's Redis keys, hold
// its 16 KiB header values. Only someone holding a SHA-256 preimage could make two values meet.
import { createHash } from 'node:crypto';
import { compileCel, MAX_KEY_VALUE_LENGTH, type CelBindings, type CelProgram, type EvaluationLimits, type InputName, type RateLimitKeyIR } from '@tollgate/api';
import type { RequestFacts } from './facts.js';

/** Longest key value kept as is (the longest key an override may name); longer ones are hashed (45 characters). */
export const MAX_KEY_LENGTH = MAX_KEY_VALUE_LENGTH;
/** The key of a request without a value for it: one budget shared by all such requests. */
export const NO_KEY = '';

/** A key's expression cannot be used (a snapshot that skipped validation); the message names it. */
export class RateLimitKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RateLimitKeyError';
  }
}

export interface CompiledKey {
  readonly ir: RateLimitKeyIR;
  /** The program of an Expression key; null for the others. */
  readonly program: CelProgram | null;
  /** Evaluated after authentication: a gateway-level limit with this key waits for the consumer. */
  readonly readsConsumer: boolean;
}

/** `at` names the key in errors, e.g. `rateLimit.local[2].by`. */
export function compileKey(ir: RateLimitKeyIR, limits: EvaluationLimits, at: string): CompiledKey {
  // A Header or ClientCertificate key is known before authentication runs.
  if (ir.type !== 'Expression') return { ir, program: null, readsConsumer: ir.type !== 'Header' && ir.type !== 'ClientCertificate' };
  const c = compileCel(ir.expression, 'descriptor', limits);
  if (!c.ok) throw new RateLimitKeyError(`${at}.expression: ${JSON.stringify(ir.expression)}: ${c.problem}`);
  return { ir, program: c.value, readsConsumer: readsConsumer(c.value.reads) };
}

/** Whether expressions reading these inputs need the consumer. */
export function readsConsumer(reads: ReadonlySet<InputName>): boolean {
  for (const r of reads) if (r.startsWith('consumer.')) return true;
  return false;
}

/** The descriptor entry name a key is sent under (docs/rate-limiting.md, "Keyed budgets"). */
export function keyEntryName(ir: RateLimitKeyIR): string {
  switch (ir.type) {
    case 'Consumer':
      return 'consumer';
    case 'ConsumerGroup':
      return 'consumer_group';
    case 'Claim':
      return `claim.${ir.name}`;
    case 'Header':
      return `header.${ir.name}`;
    case 'ClientCertificate':
      return 'client_certificate';
    case 'Expression':
      return 'key';
  }
}

/** An own property only: a claim or header named "constructor" must not find Object's. */
function own<V>(o: Readonly<Record<string, V>> | null | undefined, name: string): V | undefined {
  return o && Object.hasOwn(o, name) ? o[name] : undefined;
}

function bounded(value: string): string {
  return value.length <= MAX_KEY_LENGTH ? value : `#${createHash('sha256').update(value, 'utf8').digest('base64url')}`;
}

function scalar(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : NO_KEY;
  return NO_KEY;
}

/**
 * The key's value for a request. `bindings` are the request's CEL variables, made (within
 * their bounds) by the caller when an Expression key needs them.
 */
export function keyValue(key: CompiledKey, facts: RequestFacts, bindings: CelBindings | null): string {
  const ir = key.ir;
  switch (ir.type) {
    case 'Consumer':
      return bounded(facts.consumer?.name ?? NO_KEY);
    case 'ConsumerGroup':
      return bounded(facts.consumer?.group ?? NO_KEY);
    case 'Claim':
      return bounded(own(facts.consumer?.claims, ir.name) ?? NO_KEY);
    case 'Header': {
      // Repeated headers are joined with ", ", as the CEL variable request.headers shows them.
      const v = own(facts.headers, ir.name);
      return bounded(v === undefined ? NO_KEY : typeof v === 'string' ? v : Array.isArray(v) ? v.join(', ') : NO_KEY);
    }
    case 'ClientCertificate':
      // Only a verified certificate has a subject here (an unverified one gets the empty key).
      return bounded(facts.clientCertificate?.subject ?? NO_KEY);
    case 'Expression': {
      if (!key.program || !bindings) return NO_KEY;
      const r = key.program.run(bindings);
      return bounded(r.ok ? scalar(r.value) : NO_KEY);
    }
  }
}
