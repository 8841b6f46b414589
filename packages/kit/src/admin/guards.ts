// Guards every admin request passes before its handler.
// - Host: only loopback names and the configured ones. A web page that rebinds its own DNS
//   name to 127.0.0.1 still sends its own name as Host, so refusing unknown names keeps pages
//   out even though they reach the socket (421, as for a request sent to the wrong server).
// - Browsers: a request a web page makes carries Origin or Sec-Fetch-Site; clients such as
//   curl and gwctl send neither. Mutations (any method but GET/HEAD/OPTIONS) are refused from
//   a browser unless the user typed them (Sec-Fetch-Site: none), and cross-site reads too (a
//   page must not be able to start CPU profiles through an <img>). 403.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { replyError } from './reply.js';

const LOOPBACK_NAMES = new Set(['localhost', '[::1]']);
const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The name part of a Host header value, lower case: `[::1]:15000` -> `[::1]`. */
export function hostName(host: string): string {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const close = h.indexOf(']');
    return close < 0 ? h : h.slice(0, close + 1);
  }
  const colon = h.lastIndexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

function normalise(name: string): string {
  const n = name.trim().toLowerCase();
  // An IPv6 address may be configured without brackets; the Host header always has them.
  return n.includes(':') && !n.startsWith('[') ? `[${n}]` : n;
}

export function isLoopbackName(name: string): boolean {
  return LOOPBACK_NAMES.has(name) || LOOPBACK_V4.test(name);
}

/** A Host check over loopback names plus `allowed` (names or addresses, any port). */
export function hostGuard(allowed: readonly string[] = []) {
  const extra = new Set(allowed.map(normalise));
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const host = request.headers.host;
    // HTTP/1.0 clients may omit Host; a browser never does.
    if (host === undefined) return done();
    const name = hostName(host);
    if (isLoopbackName(name) || extra.has(name)) return done();
    replyError(reply, KIT_ERRORS.adminHostRefused, { host });
  };
}

export function browserGuard(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  const site = request.headers['sec-fetch-site'];
  const origin = request.headers.origin;
  if (SAFE_METHODS.has(request.method)) {
    if (site === 'cross-site' || site === 'same-site') {
      replyError(reply, KIT_ERRORS.adminCrossSite, { header: 'Sec-Fetch-Site', value: site, what: 'cross-site reads are taken' });
      return;
    }
    return done();
  }
  if (origin !== undefined) {
    replyError(reply, KIT_ERRORS.adminCrossSite, { header: 'Origin', value: origin, what: `${request.method} requests are taken` });
    return;
  }
  if (site !== undefined && site !== 'none') {
    replyError(reply, KIT_ERRORS.adminCrossSite, { header: 'Sec-Fetch-Site', value: site, what: `${request.method} requests are taken` });
    return;
  }
  done();
}
