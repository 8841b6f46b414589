// Guards every admin request passes before its handler. Mutating requests refuse cross-site
// browser requests: a page on another origin must not be able to change log levels or stop
// the process through a user's browser. Non-browser clients (curl, gwctl) send neither
// header and pass.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { replyError } from './reply.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function browserGuard(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (SAFE_METHODS.has(request.method)) return done();
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    replyError(reply, KIT_ERRORS.adminCrossSite, { header: 'Sec-Fetch-Site', value: site, what: `${request.method} requests are taken` });
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
      replyError(reply, KIT_ERRORS.adminCrossSite, { header: 'Origin', value: origin, what: `${request.method} requests are taken` });
      return;
    }
  }
  done();
}
