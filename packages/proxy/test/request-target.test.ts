// Paths are normalised once, before routing: route policies cannot be bypassed with another
// spelling of a path, absolute-form targets are served, and the backend and traces see the
// normalised path.
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRequestTarget, DEFAULT_PATH_SETTINGS } from '../src/pipeline/request-target.js';
import { send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

let up: Upstream;
let gw: TestGateway;

/** Chat is limited to one request per hour; anything else goes to the open route. */
beforeAll(async () => {
  up = await startUpstream();
  gw = await startGateway((port) =>
    simpleConfig(port, [
      { name: 'chat', matches: [{ path: { type: 'PathPrefix', value: '/v1/chat/completions' } }], policies: { traffic: { rateLimit: { local: [{ requests: 1, unit: 'Hours' }] } } }, backends: [{ host: up.host }] },
      { name: 'open', backends: [{ host: up.host }] },
    ]),
  );
});
afterAll(async () => {
  await gw?.close();
  await up?.close();
});

/** Sends a raw request line (node's client would normalise it) and returns the response text. */
async function raw(requestLine: string, headers = 'Host: api.example.com\r\n'): Promise<string> {
  const socket = connect(gw.port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString()));
  socket.write(`${requestLine}\r\n${headers}Connection: close\r\n\r\n`);
  await once(socket, 'close');
  return text;
}

const status = (text: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1]);
const upstreamUrl = (text: string) => (JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { url: string }).url;

describe('route policies cannot be bypassed by spelling', () => {
  it('encoded, dot-segment and absolute-form spellings all reach the limited route, normalised', async () => {
    expect(status(await raw('GET /v1/chat/completions HTTP/1.1'))).toBe(200);
    for (const line of [
      'GET /v1/chat/completions HTTP/1.1',
      'GET /v1/%63hat/completions HTTP/1.1',
      'GET /v1/x/../chat/completions HTTP/1.1',
      'GET /v1/./chat/%2e%2e/chat/completions HTTP/1.1',
      'GET http://api.example.com/v1/chat/completions HTTP/1.1',
    ]) {
      expect(status(await raw(line)), line).toBe(429);
    }
  });

  it('the backend receives the normalised path, with the query untouched', async () => {
    const text = await raw('GET /other/a/../b/%7euser?q=%2e%2e HTTP/1.1');
    expect(status(text)).toBe(200);
    expect(upstreamUrl(text)).toBe('/other/b/~user?q=%2e%2e');
  });

  it('an absolute-form target is served; its authority is the host the backend sees', async () => {
    const text = await raw('GET http://other.example.com:8080/thing?x=1 HTTP/1.1', 'Host: ignored.example.com\r\n');
    expect(status(text)).toBe(200);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { url: string; headers: Record<string, string> };
    expect(body.url).toBe('/thing?x=1');
    expect(body.headers.host).toBe('other.example.com:8080');
  });

  it('encoded slashes, a raw backslash and malformed escapes are refused with 400 naming the problem', async () => {
    for (const [line, why] of [
      ['GET /v1%2Fchat/completions HTTP/1.1', /encoded "\/" \(%2F\).*config\.paths\.escapedSlashes/],
      ['GET /v1%5cchat HTTP/1.1', /encoded "\\" \(%5C\)/],
      ['GET /v1/%zz HTTP/1.1', /malformed percent-encoding "%zz"/],
    ] as const) {
      const text = await raw(line);
      expect(status(text), line).toBe(400);
      expect(text).toMatch(why);
    }
    expect((await send(`${gw.url}/still-serving`)).status).toBe(200);
  });
});

describe('what never reaches a route', () => {
  it('a method outside the proxied ones gets 404; the bind keeps serving', async () => {
    expect(status(await raw('PROPFIND /v1/chat/completions HTTP/1.1'))).toBe(404);
    expect(status(await raw('GET /other HTTP/1.1'))).toBe(200);
  });

  it('a request Node cannot parse gets 400 and the connection closes', async () => {
    const text = await raw('GET /other HTTP/1.1', 'Host: api.example.com\r\nBad Header\r\n');
    expect(status(text)).toBe(400);
    expect(status(await raw('GET /other HTTP/1.1'))).toBe(200);
  });

  it('every proxied method reaches the pipeline (HEAD without a body, OPTIONS, TRACE and PATCH too)', async () => {
    const seen: Record<string, { status: number; echoed: string | null }> = {};
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE']) {
      const text = await raw(`${method} /other/m HTTP/1.1`, 'Host: api.example.com\r\nContent-Length: 0\r\n');
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      // A HEAD answer has no body: the backend's echo of the method is not there to read.
      seen[method] = { status: status(text), echoed: method === 'HEAD' ? null : (JSON.parse(body) as { method: string }).method };
    }
    expect(seen).toEqual(Object.fromEntries(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE'].map((m) => [m, { status: 200, echoed: m === 'HEAD' ? null : m }])));
  });
});

describe('parseRequestTarget', () => {
  const parse = (url: string, settings = DEFAULT_PATH_SETTINGS) => parseRequestTarget(url, settings);
  it('normalises per RFC 3986 and the settings', () => {
    expect(parse('/a/b/../../c/./d/')).toEqual({ ok: true, path: '/c/d/', query: '', authority: null });
    expect(parse('/..')).toMatchObject({ path: '/' });
    expect(parse('/a%2fb', { mergeSlashes: false, escapedSlashes: 'KeepUnchanged' })).toMatchObject({ path: '/a%2Fb' });
    expect(parse('/a%2fb/../c', { mergeSlashes: false, escapedSlashes: 'UnescapeAndForward' })).toMatchObject({ path: '/a/c' });
    expect(parse('/a//b///c', { mergeSlashes: true, escapedSlashes: 'Reject' })).toMatchObject({ path: '/a/b/c' });
    expect(parse('/a//b')).toMatchObject({ path: '/a//b' });
    expect(parse('/p#frag?x')).toMatchObject({ path: '/p', query: '' });
    expect(parse('/%e2%82%ac')).toMatchObject({ path: '/%E2%82%AC' });
    expect(parse('*')).toMatchObject({ ok: false });
    expect(parse('HTTPS://h.example/x?y')).toEqual({ ok: true, path: '/x', query: 'y', authority: 'h.example' });
    expect(parse('http://user@h/x')).toMatchObject({ ok: false });
  });
});
