// Error answers of the admin servers: one plain-text line, the catalog's status, and the code
// in a header so scripts can tell errors apart without parsing the text.
import type { FastifyReply } from 'fastify';
import { formatMessage, type ErrorDef, type Params } from '@tollgate/api';

export const TEXT = 'text/plain; charset=utf-8';

export function replyError(reply: FastifyReply, error: ErrorDef & { readonly status: number }, params: Params = {}): FastifyReply {
  return reply.code(error.status).header('x-tollgate-error', error.code).type(TEXT).send(`${formatMessage(error.message, params)}\n`);
}
