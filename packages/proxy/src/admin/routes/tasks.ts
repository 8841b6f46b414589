// GET /debug/tasks: a tree of the live work of the process: listeners, requests in flight
// (stage, age, upstream call), armed and streaming trace sessions, background tasks. Request
// targets are shown with credential query parameters redacted. Requests are every thread's, each
// with the thread serving it (../thread-views.ts); listeners and trace sessions are the main
// thread's (every thread listens on the same binds; every session is armed there, and shows
// which thread streams it once one took its request).
import { redactPathAndQuery } from '@tollgate/api';
import type { FastifyInstance } from 'fastify';
import type { AdminContext } from '../context.js';
import { gather, withMissing } from '../thread-views.js';
import { rejectUnknownQuery } from '@tollgate/kit';

export function tasksRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.get('/debug/tasks', { config: { index: 'live work: listeners, requests in flight, trace sessions, background tasks' } }, async (request, reply) => {
    if (rejectUnknownQuery(request.query, [], reply)) return reply;
    const rt = ctx.runtime;
    const requests = await gather(ctx, 'requests');
    const now = Date.now();
    return withMissing({
      uptimeMs: now - rt.startedAt,
      listeners: rt.listening.map((l) => ({ name: `bind ${l.address}:${l.boundPort}`, address: l.address, port: l.boundPort })),
      requests: requests.parts.flatMap(({ worker, value }) => value.map((r) => ({
        name: `request ${r.id}`,
        worker,
        method: r.method,
        url: redactPathAndQuery(r.url, rt.hasConfig ? rt.current.credentials : undefined),
        stage: r.stage,
        ageMs: now - r.startedAt,
        route: r.route ?? null,
        traced: r.traced ?? null,
        children: r.upstream && r.stage !== 'routing' ? [{ name: `upstream call ${r.upstream}`, target: r.upstream, stage: r.stage }] : [],
      }))),
      traceSessions: [
        // A session a worker thread took still waits here until it ends: it streams from that thread.
        ...rt.traces.waiting().map((s) => {
          const taker = s.claim?.taker ?? null;
          const name = `trace session ${s.id}`;
          return taker === null ? { name, state: 'armed', match: s.filterText, ageMs: now - s.armedAt } : { name, state: 'streaming', worker: taker, ageMs: now - s.armedAt };
        }),
        ...[...rt.traces.active].map((s) => ({ name: `trace session ${s.id}`, state: 'streaming', worker: 0, request: s.claimed, ageMs: now - s.armedAt })),
      ],
      background: ctx.tasks().map((t) => ({ name: t.name, ...t.state() })),
    }, requests);
  });
}
