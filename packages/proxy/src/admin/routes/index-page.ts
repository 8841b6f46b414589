// GET /: a small HTML index of the admin endpoints.
import type { FastifyInstance } from 'fastify';

const ENDPOINTS: [string, string, string][] = [
  ['GET', '/config_dump', 'the loaded configuration (JSON; secrets redacted)'],
  ['GET', '/debug/trace', 'trace the next request as server-sent events; ?match=&lt;CEL&gt; narrows it'],
  ['GET', '/logging', 'current log directive; POST ?level=&lt;directive&gt; sets it, POST ?reset restores it'],
  ['GET', '/memory', 'process and V8 memory (JSON)'],
  ['GET', '/debug/pprof/profile', 'CPU profile, pprof format; ?seconds=1..300 (default 10)'],
  ['GET', '/debug/pprof/heap', 'heap profile, pprof format'],
  ['GET', '/debug/tasks', 'live work: listeners, requests in flight, trace sessions, background tasks'],
  ['POST', '/quitquitquit', 'graceful shutdown'],
];

const PAGE = `<!doctype html><meta charset="utf-8"><title>Tollgate admin</title>
<h1>Tollgate admin</h1>
<table>${ENDPOINTS.map(([m, p, d]) => `<tr><td>${m}</td><td>${m === 'GET' ? `<a href="${p}">${p}</a>` : p}</td><td>${d}</td></tr>`).join('')}</table>
`;

export function indexRoutes(app: FastifyInstance): void {
  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE));
}
