// node:http2's client for the tests of HTTP/2 from clients (h2c by prior knowledge, h2 over
// TLS): one request on a session, and the scenarios both kinds of listener must pass.
import { once } from 'node:events';
import type { ClientHttp2Session, IncomingHttpHeaders } from 'node:http2';
import { startUpstream, until, type Upstream } from '@tollgate/testkit';

export interface H2Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A GET, or a POST of `body`, with `headers` (pseudo-headers included). */
export function h2Request(s: ClientHttp2Session, headers: Record<string, string>, body?: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = s.request({ ':method': body === undefined ? 'GET' : 'POST', ...headers }, { endStream: body === undefined });
    let status = 0;
    let got: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
      got = h;
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ status, headers: got, body: Buffer.concat(chunks).toString() }));
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}

/**
 * Starts a POST of 8 KiB of unfinished JSON and keeps the client's side open, so only the proxy
 * can end the stream; resolves once the stream closed, with the answer's headers and the
 * stream's RST_STREAM code.
 */
export async function postUnfinishedBody(s: ClientHttp2Session, authority: string): Promise<{ headers: IncomingHttpHeaders; rstCode: number }> {
  const stream = s.request({ ':method': 'POST', ':path': '/v1/chat/completions', ':authority': authority, 'content-type': 'application/json' });
  stream.on('error', () => undefined);
  stream.write(`{"model":"m","messages":[{"role":"user","content":"${'x'.repeat(8192)}`);
  const [headers] = (await once(stream, 'response')) as [IncomingHttpHeaders];
  stream.resume();
  await once(stream, 'close');
  return { headers, rstCode: stream.rstCode ?? -1 };
}

/** A backend whose answers wait for release(): what the drain tests keep in flight. */
export async function heldBackend(): Promise<{ up: Upstream; release: () => void }> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const up = await startUpstream((_req, res) => void held.then(() => res.end('late but whole')));
  return { up, release };
}

/**
 * Closes the gateway (`close`) with one request of `s` in flight on `held`, released once the
 * session got its GOAWAY; resolves with that request's answer once the close ended.
 */
export async function drainWithOneInFlight(s: ClientHttp2Session, authority: string, held: { up: Upstream; release: () => void }, close: () => Promise<void>): Promise<H2Answer> {
  const goaway = once(s, 'goaway');
  const inflight = h2Request(s, { ':path': '/slow', ':authority': authority });
  await until(() => held.up.requests.length === 1);
  const closing = close();
  await goaway;
  held.release();
  const answer = await inflight;
  await closing;
  return answer;
}
