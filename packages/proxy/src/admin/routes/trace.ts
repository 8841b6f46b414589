// GET /debug/trace[?match=<CEL>]: arms a trace session and streams the events of the next
// matching request as server-sent events, then ends. A comment line opens the stream and a
// keepalive comment follows every few seconds while it waits; a client that disconnects
// disarms its session.
import type { FastifyInstance } from 'fastify';
import { DEFAULT_LIMITS, type TraceEvent } from '@tollgate/api';
import type { TraceFilter } from '../../trace/filter.js';
import { TooManyTraceSessions } from '../../trace/hub.js';
import { SharedClaim } from '../../trace/shared-claim.js';
import { ERRORS } from '../../errors.js';
import type { AdminContext } from '../context.js';
import { rejectUnknownQuery, single } from '@tollgate/kit';

const DEFAULT_KEEPALIVE_MS = 5000;

export function traceRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/debug/trace', { config: { index: 'trace the next request as server-sent events; ?match=&lt;CEL&gt; narrows it' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, ['match'], reply)) return reply;
    const match = single((request.query as Record<string, unknown>).match);
    if (match === null || match === '') {
      return reply.code(400).type('text/plain; charset=utf-8').send('match must be one non-empty CEL expression, e.g. request.headers["x-trace-id"] == "abc"\n');
    }
    let filter: TraceFilter | null = null;
    if (match !== undefined) {
      // CEL is loaded by the first session with a match: a proxy that is never traced that way
      // does not keep its code in memory.
      const { compileTraceFilter, TraceFilterError } = await import('../../trace/filter.js');
      try {
        // The bounds of the snapshot serving (the defaults before the first).
        filter = compileTraceFilter(match, ctx.runtime.hasConfig ? (ctx.runtime.current.ir.limits ?? DEFAULT_LIMITS) : DEFAULT_LIMITS);
      } catch (err) {
        if (err instanceof TraceFilterError) return reply.code(400).type('text/plain; charset=utf-8').send(`${err.message}\n`);
        throw err;
      }
    }
    const hub = ctx.runtime.traces;
    const res = reply.raw;
    // Armed before the stream is answered, so a session over the cap gets its 429 from the
    // one check the hub makes (the sink writes only once a request is traced, after the 200).
    // Started once the session is armed everywhere; the sink may end the stream before that.
    const timers: { keepalive?: NodeJS.Timeout } = {};
    const sink = {
      send: (event: TraceEvent) => void res.write(`data: ${JSON.stringify(event)}\n\n`),
      end: () => {
        clearInterval(timers.keepalive);
        res.end();
      },
    };
    // With worker threads the session waits on every thread; the first to take a request
    // that matches streams it, through this thread's sink (claim: one shared word).
    const claim = ctx.workers ? SharedClaim.create() : null;
    let session;
    try {
      session = hub.arm(filter, match ?? null, sink, claim);
    } catch (err) {
      if (!(err instanceof TooManyTraceSessions)) throw err;
      const spec = ERRORS.tooManyTraceSessions;
      return reply.code(spec.status).type('text/plain; charset=utf-8').send(`${spec.code}: ${err.message}\n`);
    }
    reply.hijack();
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
    res.on('close', () => {
      clearInterval(timers.keepalive);
      hub.disarm(session);
    });
    const workers = ctx.workers;
    if (workers && claim) {
      const id = session.id;
      res.on('close', () => workers.disarmTrace(id));
      // The armed line comes once every thread waits: a client may send its request then.
      await workers.armTrace({ id, match: match ?? null, claim: claim.buffer }, sink);
      if (res.writableEnded || res.destroyed) return;
    }
    res.write(`: trace session ${session.id} armed${match ? ` (match: ${match})` : ''}; waiting for the next request\n\n`);
    timers.keepalive = setInterval(() => res.write(': keepalive\n\n'), ctx.traceKeepaliveMs ?? DEFAULT_KEEPALIVE_MS);
    timers.keepalive.unref();
  });
}
