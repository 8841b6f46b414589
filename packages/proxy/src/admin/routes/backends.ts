// GET /backends[?name=<backend>][&namespace=<ns>]: the backends of the loaded snapshot with the
// live state of each endpoint (health, requests in flight and in total, latency, ejection), as
// `gwctl config backends` shows them. The same entries as the `backends` of /config_dump,
// without the rest of the configuration (which is large with thousands of routes). Each thread
// keeps its own endpoint state: the view merges every thread's (../thread-views.ts).
import type { FastifyInstance, FastifyReply } from 'fastify';
import { rejectUnknownQuery, replyError, single } from '@tollgate/kit';
import { ERRORS } from '../../errors.js';
import { backendHealth } from '../config-dump.js';
import type { AdminContext } from '../context.js';
import { gather, withMissing } from '../thread-views.js';
import { mergedEndpointViews } from '../../upstream/endpoints.js';

/** Longest value a filter takes: a backend name is a DNS name and a port, or a namespace/name reference. */
const MAX_FILTER_LENGTH = 512;

/** The value of one optional filter, or a reply saying what is wrong with it (false: answered). */
function filter(reply: FastifyReply, query: Record<string, unknown>, key: 'name' | 'namespace', example: string): string | undefined | false {
  const value = single(query[key]);
  if (value === undefined) return undefined;
  if (value === null || value === '' || value.length > MAX_FILTER_LENGTH) {
    void replyError(reply, ERRORS.backendsFilter, { key, max: String(MAX_FILTER_LENGTH), example });
    return false;
  }
  return value;
}

export function backendsRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/backends', { config: { index: 'backends and the live state of their endpoints (JSON); ?name=&lt;backend&gt; and ?namespace=&lt;ns&gt; narrow it' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['name', 'namespace'], reply)) return reply;
    const query = request.query as Record<string, unknown>;
    const name = filter(reply, query, 'name', 'llm.models.svc.cluster.local:8000');
    if (name === false) return reply;
    const namespace = filter(reply, query, 'namespace', 'models');
    if (namespace === false) return reply;
    const rt = ctx.runtime;
    if (!rt.hasConfig) return reply.code(503).type('application/json; charset=utf-8').send(JSON.stringify({ error: 'no config loaded yet' }, null, 2));
    const endpoints = await gather(ctx, 'endpoints');
    const state = { endpoints: mergedEndpointViews(endpoints.parts.map((p) => p.value)), coolDowns: rt.coolDowns };
    const backends = backendHealth(rt.current.ir, state).filter((b) => (name === undefined || b.name === name) && (namespace === undefined || b.namespace === namespace));
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(withMissing({ version: rt.current.ir.version, backends }, endpoints), null, 2));
  });
}
