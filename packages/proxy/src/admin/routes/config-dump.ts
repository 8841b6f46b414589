// GET /config_dump: the loaded configuration (see ../config-dump.ts for the shape), with the
// live state every thread keeps of its own (the endpoints, the resolved names) merged.
import type { FastifyInstance } from 'fastify';
import { configDump } from '../config-dump.js';
import type { AdminContext } from '../context.js';
import { gather, withMissing } from '../thread-views.js';
import { newestNames } from '../../upstream/dns-cache.js';
import { mergedEndpointViews } from '../../upstream/endpoints.js';
import { rejectUnknownQuery } from '@tollgate/kit';
import { MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_BYTES } from '../../server/http2.js';
import { ALPN_PROTOCOLS } from '../../server/alpn.js';

export function configDumpRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/config_dump', { config: { index: 'the loaded configuration (JSON; secrets redacted)' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const rt = ctx.runtime;
    const delivery = ctx.delivery?.() ?? null;
    // Cluster mode before the first snapshot: nothing to dump but the stream's state.
    if (!rt.hasConfig) return reply.code(503).type('application/json; charset=utf-8').send(JSON.stringify({ error: 'no config loaded yet', delivery }, null, 2));
    const t = rt.clientTimeouts;
    const settings = {
      requestHeadersTimeoutMs: t.requestHeadersMs,
      requestBodyIdleTimeoutMs: t.requestBodyIdleMs,
      requestBodyTimeoutMs: t.requestBodyMs,
      keepAliveTimeoutMs: t.keepAliveMs,
      backendBodyIdleTimeoutMs: rt.backendBodyIdleTimeoutMs,
      ...rt.clientBounds,
      maxWebSocketConnections: rt.websockets.maxConnections,
      websocketIdleTimeoutMs: rt.websockets.idleMs,
      tlsClientHelloTimeoutMs: rt.tlsBinds.deps.settings.helloTimeoutMs,
      tlsIdleTimeoutMs: rt.tlsBinds.deps.settings.idleMs,
      maxTraceSessions: rt.traces.maxArmed,
      maxTokensChargedPerResponse: rt.maxTokensChargedPerResponse,
      maxRateLimitKeys: rt.maxRateLimitKeys,
      consumerMetricsTopN: rt.metrics.consumerMetricsTopN,
      http2: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListBytes: MAX_HEADER_LIST_BYTES, alpnProtocols: ALPN_PROTOCOLS },
      basicAuth: rt.passwords.settings,
      workers: 1 + (ctx.workers?.threads ?? 0),
      retries: rt.retrySettings,
    };
    const [names, endpoints] = await Promise.all([gather(ctx, 'dns'), gather(ctx, 'endpoints')]);
    // The host names of Backend resources as the proxy resolved them, and until when.
    const dns = { settings: rt.dns.settings, names: newestNames(names.parts.map((p) => p.value)) };
    const state = { endpoints: mergedEndpointViews(endpoints.parts.map((p) => p.value)), coolDowns: rt.coolDowns };
    const body = withMissing({ ...configDump(rt.current.ir, rt.loadedAt, state, settings), delivery, dns }, names, endpoints);
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(body, null, 2));
  });
}
