// Admin query strings are validated like any other input: unknown parameters are errors.
import type { FastifyReply } from 'fastify';

export function rejectUnknownQuery(query: unknown, allowed: readonly string[], reply: FastifyReply): boolean {
  const keys = query !== null && typeof query === 'object' ? Object.keys(query) : [];
  const unknown = keys.filter((k) => !allowed.includes(k));
  if (!unknown.length) return false;
  void reply
    .code(400)
    .type('text/plain; charset=utf-8')
    .send(`unknown query parameter ${unknown.map((k) => `"${k}"`).join(', ')}; ${allowed.length ? `expected ${allowed.join(', ')}` : 'this endpoint takes none'}\n`);
  return true;
}

/** A single string value of a query parameter (a repeated parameter is an error). */
export function single(value: unknown): string | undefined | null {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : null;
}
