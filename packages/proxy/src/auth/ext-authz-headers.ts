// What an authorization service's answer may do to headers, in one place for both protocols:
// every name and value is checked (an answer carrying a CR, LF or another control character,
// or a name that is not an HTTP token, is a bad answer as a whole, so nothing of it applies);
// headers that frame the message or the connection stay the proxy's; counts are bounded.
// Request header mutations follow Envoy's HeaderValueOption actions against the request's
// headers; docs/authentication.md ("extAuthz") says what applies where.
import type { IncomingHttpHeaders } from 'node:http';
import { ServiceFailure, type HeaderMutation } from './ext-authz-answer.js';

export type { AppendAction, HeaderMutation } from './ext-authz-answer.js';

/** Headers of one answer (each list: upstream, removals, response, denial): more makes the answer bad. */
export const MAX_ANSWER_HEADERS = 64;
/** Bytes of one header value an answer may carry. */
export const MAX_ANSWER_HEADER_VALUE_BYTES = 8192;

/** The answer cannot be used: the check takes its failure mode (reason bad_response). */
const bad = (detail: string): ServiceFailure => new ServiceFailure('bad_response', detail);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

// The proxy frames the requests and responses it sends: a service does not set or remove these.
const RESERVED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length', 'host', 'http2-settings']);

export function isReserved(name: string): boolean {
  return RESERVED.has(name) || name.startsWith(':');
}

/** A checked header name (lower case); throws ServiceFailure (bad_response). */
export function checkedName(name: string, where: string): string {
  if (!TOKEN.test(name) || name.length > 256) throw bad(`${where}: header name ${JSON.stringify(name.slice(0, 64))} is not an HTTP token`);
  return name.toLowerCase();
}

/** A checked header value; throws ServiceFailure (bad_response). */
export function checkedValue(name: string, value: string, where: string): string {
  if (!FIELD_VALUE.test(value)) throw bad(`${where}: the value of ${name} has a control character (CR, LF, NUL, ...)`);
  if (Buffer.byteLength(value) > MAX_ANSWER_HEADER_VALUE_BYTES) throw bad(`${where}: the value of ${name} is over ${MAX_ANSWER_HEADER_VALUE_BYTES} bytes`);
  return value;
}

export function checkCount(n: number, where: string): void {
  if (n > MAX_ANSWER_HEADERS) throw bad(`${where}: ${n} headers, more than ${MAX_ANSWER_HEADERS}`);
}

function flat(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/**
 * The request headers to set upstream: each mutation in order, against the request's headers
 * and the mutations before it. An appended value joins the existing one with ", " (one field
 * line, as HTTP allows for list-valued fields). Reserved names are left alone.
 */
export function requestHeaderSets(current: IncomingHttpHeaders, mutations: readonly HeaderMutation[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name, value, action } of mutations) {
    if (isReserved(name)) continue;
    const existing = name in out ? out[name] : flat(current[name]);
    switch (action) {
      case 'APPEND_IF_EXISTS_OR_ADD':
        out[name] = existing === undefined ? value : `${existing}, ${value}`;
        break;
      case 'ADD_IF_ABSENT':
        if (existing === undefined) out[name] = value;
        break;
      case 'OVERWRITE_IF_EXISTS_OR_ADD':
        out[name] = value;
        break;
      case 'OVERWRITE_IF_EXISTS':
        if (existing !== undefined) out[name] = value;
        break;
    }
  }
  return out;
}

/**
 * Headers for a response the proxy does not have yet (the upstream's, or a denial): every
 * action sets the header; several values of one name join with ", ". ADD_IF_ABSENT and
 * OVERWRITE_IF_EXISTS cannot see the upstream's headers and are applied as a set too.
 */
export function responseHeaderSets(mutations: readonly HeaderMutation[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { name, value } of mutations) {
    // x-tollgate-*: the gateway's own answers (x-tollgate-error) are not the service's to forge.
    if (isReserved(name) || name.startsWith('x-tollgate-')) continue;
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}
