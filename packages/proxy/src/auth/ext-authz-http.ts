// The HTTP protocol of extAuthz: the request (method, path with the policy's pathPrefix, the
// chosen headers, the body when withBody) sent to the service; a 2xx answer allows, any other
// is the answer the client gets. A bounded connection pool per service address; every call
// has a deadline that covers the answer's headers and body; a body is read up to a bound.
import type { Dispatcher } from 'undici';
import { Pool } from '../upstream/undici-pool.js';
import { denialStatus, MAX_DENIAL_BODY_BYTES, ServiceFailure, type ExtAuthzAnswer, type ExtAuthzCall } from './ext-authz-answer.js';
import { checkCount, checkedName, checkedValue, isReserved, type HeaderMutation } from './ext-authz-headers.js';

/** Connections to one authorization service; more calls wait for one within their deadline. */
export const MAX_HTTP_CONNECTIONS = 64;
/** Bytes of the service's response headers. */
const MAX_HEADER_BYTES = 16 * 1024;

export interface HttpSettings {
  readonly pathPrefix: string;
  /** Lower case. */
  readonly headersToUpstream: readonly string[];
  /** Lower case; null: every header. */
  readonly headersToClient: readonly string[] | null;
}

export class ExtAuthzHttpClient {
  readonly #pool: Pool;

  constructor(readonly address: string) {
    this.#pool = new Pool(`http://${address}`, { connections: MAX_HTTP_CONNECTIONS, pipelining: 1, maxHeaderSize: MAX_HEADER_BYTES, keepAliveTimeout: 30_000 });
  }

  async check(call: ExtAuthzCall, settings: HttpSettings, timeoutMs: number): Promise<ExtAuthzAnswer> {
    const signal = AbortSignal.timeout(timeoutMs);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.#pool.request({
        method: call.method,
        path: settings.pathPrefix + call.path,
        headers: { ...call.headers, host: call.host, 'content-length': String(call.body?.length ?? 0) },
        body: call.body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (err) {
      throw failure(err, signal);
    }
    const status = res.statusCode;
    if (status >= 200 && status < 300) {
      // The decision is made; what the body holds is not read (a long one closes the connection).
      res.body.dump({ limit: MAX_DENIAL_BODY_BYTES }).catch(() => {});
      return { allowed: true, upstream: chosen(res.headers, settings.headersToUpstream, 'the allowing answer'), remove: [], response: [] };
    }
    const headers = chosen(res.headers, settings.headersToClient, 'the denying answer');
    const text = await boundedText(res.body, signal);
    const contentType = first(res.headers['content-type']) ?? 'text/plain; charset=utf-8';
    return { allowed: false, status: denialStatus(status), headers, body: text === null || text === '' ? null : { contentType, text } };
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

function failure(err: unknown, signal: AbortSignal): ServiceFailure {
  const code = (err as { code?: unknown } | null)?.code;
  const detail = err instanceof Error ? err.message : String(err);
  if (signal.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') return new ServiceFailure('timeout', detail);
  // Bytes that are not an HTTP response, or headers over the bound.
  if (typeof code === 'string' && (code.startsWith('HPE_') || code === 'UND_ERR_HEADERS_OVERFLOW' || code === 'UND_ERR_INFO')) return new ServiceFailure('bad_response', detail);
  if ((err as Error | null)?.name === 'HTTPParserError') return new ServiceFailure('bad_response', detail);
  return new ServiceFailure('unavailable', detail);
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The answer's headers named in `names` (null: all), checked; a repeated header joined with ", " (set-cookie: its first). */
function chosen(headers: Dispatcher.ResponseData['headers'], names: readonly string[] | null, where: string): HeaderMutation[] {
  const out: HeaderMutation[] = [];
  const entries = names === null ? Object.entries(headers) : names.map((n) => [n, headers[n]] as const);
  checkCount(entries.length, where);
  for (const [key, v] of entries) {
    if (v === undefined) continue;
    const name = checkedName(key, where);
    if (isReserved(name) || (names === null && name === 'content-type')) continue;
    const value = Array.isArray(v) ? (name === 'set-cookie' ? v[0]! : v.join(', ')) : v;
    out.push({ name, value: checkedValue(name, value, where), action: 'OVERWRITE_IF_EXISTS_OR_ADD' });
  }
  return out;
}

/** The body as text, or null when it is over MAX_DENIAL_BODY_BYTES or cannot be read in time. */
async function boundedText(body: Dispatcher.ResponseData['body'], signal: AbortSignal): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_DENIAL_BODY_BYTES || signal.aborted) {
        body.destroy();
        return null;
      }
      chunks.push(chunk);
    }
  } catch {
    return null;
  }
  return Buffer.concat(chunks).toString('utf8');
}
