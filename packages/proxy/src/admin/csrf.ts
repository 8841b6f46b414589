// Mutating admin endpoints refuse cross-site browser requests: a page on another origin must
// not be able to change log levels or stop the proxy through a user's browser. Non-browser
// clients (curl, gwctl) send neither header and pass.
import type { FastifyReply, FastifyRequest } from 'fastify';

export function crossSiteGuard(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return done();
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    void reply.code(403).type('text/plain; charset=utf-8').send(`cross-site request refused (Sec-Fetch-Site: ${site})\n`);
    return;
  }
  const origin = request.headers.origin;
  if (origin !== undefined) {
    let sameOrigin = false;
    try {
      sameOrigin = new URL(origin).host === request.headers.host;
    } catch {
      sameOrigin = false;
    }
    if (!sameOrigin) {
      void reply.code(403).type('text/plain; charset=utf-8').send(`cross-origin request refused (Origin: ${origin})\n`);
      return;
    }
  }
  done();
}
