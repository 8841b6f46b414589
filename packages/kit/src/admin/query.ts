// Admin query strings are validated like any other input: unknown parameters are errors.
import type { FastifyReply } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { replyError } from './reply.js';

export function queryKeys(query: unknown): string[] {
  return query !== null && typeof query === 'object' ? Object.keys(query) : [];
}

/** Answers 400 naming the unknown parameters and returns true, or returns false. */
export function rejectUnknownQuery(query: unknown, allowed: readonly string[], reply: FastifyReply): boolean {
  const unknown = queryKeys(query).filter((k) => !allowed.includes(k));
  if (!unknown.length) return false;
  replyError(reply, KIT_ERRORS.adminUnknownQuery, {
    names: unknown.map((k) => `"${k}"`).join(', '),
    expected: allowed.length ? `expected ${allowed.join(', ')}` : 'this endpoint takes none',
  });
  return true;
}

/** A single string value of a query parameter (a repeated parameter is null). */
export function single(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : null;
}
