// The requests the load generator sends, and a one-shot check that a target answers them
// as expected before it is loaded (a proxy that answers 404 quickly must not look fast).
import http from 'node:http';

export const FIXED_BODY = 'fixed response from the tollgate bench backend\n';

/**
 * The route the fixed-backend cases hit. In the 10,000-route table it sits in the middle
 * (neither first nor last in config order) and shares its hostname with a sixth of the table.
 */
export const TARGET = { index: 5000, host: 'api-2.bench.local', path: '/svc/05000/items' };

export const REQUESTS = {
  /** GET through the proxies to the fixed-response backend. */
  fixed: {
    method: 'GET',
    path: TARGET.path,
    headers: { host: TARGET.host },
    body: null,
    check: (status, body) => status === 200 && body === FIXED_BODY,
  },
  /** A non-streaming OpenAI chat completion to mock-llm. */
  chat: {
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'mock-gpt',
      messages: [{ role: 'user', content: 'measure the gateway in front of the model' }],
      max_tokens: 16,
    }),
    check: (status, body) => status === 200 && body.includes('"chat.completion"') && body.includes('"usage"'),
  },
};

/** Sends `request` once to `baseUrl`; resolves to null when it passes its check, else a reason. */
export function probe(baseUrl, request, timeoutMs = 5000) {
  const url = new URL(request.path, baseUrl);
  return new Promise((resolve) => {
    const headers = { ...request.headers };
    if (request.body !== null) headers['content-length'] = String(Buffer.byteLength(request.body));
    const req = http.request(url, { method: request.method, headers, timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        resolve(request.check(res.statusCode, body) ? null : `${request.method} ${url.href} answered ${res.statusCode}: ${body.slice(0, 200).trim()}`);
      });
      res.on('error', (err) => resolve(`${request.method} ${url.href}: ${err.message}`));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', (err) => resolve(`${request.method} ${url.href}: ${err.message}`));
    req.end(request.body ?? undefined);
  });
}

/** Retries probe() until it passes or `timeoutMs` elapses (for servers with no ready line). */
export async function waitUntilAnswering(baseUrl, request, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let reason = null;
  while (Date.now() < deadline) {
    reason = await probe(baseUrl, request, 1000);
    if (reason === null) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not answering after ${timeoutMs} ms: ${reason}`);
}
