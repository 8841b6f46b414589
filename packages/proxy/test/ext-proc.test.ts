// extProc end to end over real sockets: a standalone proxy, the Envoy external processor built
// on go-control-plane's official types (e2e/tools/ext-proc), an echoing upstream and mock-llm.
// Each phase and each mutation, immediate answers at the request and at the response, the
// per-message timeout and both failure modes, and a processor that hangs, answers garbage or
// the wrong phase, closes its stream, fails it, or sends mutations over the bounds: a clear
// answer each time and the proxy keeps serving.
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../src/config/load-file.js';
import type { MockLlm } from '@tollgate/mock-llm';
import { echoed, openTrace, send, simpleConfig, startGateway, startUpstream, useMockLlm, type TestGateway, type Upstream } from './helpers.js';
import { extProcAvailability, startExtProc, type ExtProcessor } from './support/ext-proc.js';

const available = extProcAvailability();

const MARKER = 'ext-proc-marker';
const REWRITTEN = 'rewritten-by-processor';

/** A TCP port nothing listens on (bound, then closed). */
async function deadAddress(): Promise<string> {
  const s = createTcpServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as AddressInfo;
  s.close();
  await once(s, 'close');
  return `127.0.0.1:${port}`;
}

const route = (name: string, prefix: string, host: string, extProc: Record<string, unknown>) => ({
  name,
  matches: [{ path: { type: 'PathPrefix', value: prefix } }],
  policies: { traffic: { extProc } },
  backends: [{ host }],
});

describe.runIf(available.run)('extProc against a processor on the official Go types', () => {
  let processor: ExtProcessor;
  let closing: ExtProcessor;
  let echo: Upstream;
  let answering: Upstream;
  let gw: TestGateway;

  beforeAll(async () => {
    [processor, closing] = await Promise.all([startExtProc(), startExtProc(['-mode', 'close'])]);
    echo = await startUpstream();
    // A backend whose answer carries the marker and a header the processor removes.
    answering = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-ext-proc-remove': 'backend', 'x-backend': 'kept' });
      res.end(`the backend says ${MARKER} twice: ${MARKER}`);
    });
    const dead = await deadAddress();
    const svc = { host: processor.address };
    const timeout = '500ms';
    gw = await startGateway((port) =>
      simpleConfig(port, [
        route('headers', '/h', echo.host, { service: svc, messageTimeout: timeout }),
        route('open', '/open', echo.host, { service: svc, messageTimeout: timeout, failureMode: 'FailOpen' }),
        route('buffered', '/rb', echo.host, { service: svc, messageTimeout: timeout, maxBufferedBytes: 65536, processingMode: { requestBodyMode: 'BUFFERED', responseHeaderMode: 'SKIP' } }),
        route('streamed', '/rs', echo.host, { service: svc, messageTimeout: timeout, processingMode: { requestHeaderMode: 'SKIP', requestBodyMode: 'STREAMED', responseHeaderMode: 'SKIP' } }),
        route('response', '/resp', answering.host, { service: svc, messageTimeout: timeout, processingMode: { requestHeaderMode: 'SKIP', responseBodyMode: 'BUFFERED' } }),
        route('response-streamed', '/rstream', answering.host, { service: svc, messageTimeout: timeout, processingMode: { responseBodyMode: 'STREAMED' } }),
        route('closing', '/closing', echo.host, { service: { host: closing.address }, messageTimeout: timeout }),
        route('streamed-closing', '/rsc', echo.host, { service: { host: closing.address }, messageTimeout: timeout, processingMode: { requestHeaderMode: 'SKIP', requestBodyMode: 'STREAMED', responseHeaderMode: 'SKIP' } }),
        route('down', '/down', echo.host, { service: { host: dead }, messageTimeout: timeout }),
        route('down-open', '/dopen', echo.host, { service: { host: dead }, messageTimeout: timeout, failureMode: 'FailOpen' }),
      ]),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([echo?.close(), answering?.close(), processor?.stop(), closing?.stop()]);
  });

  it('request headers: the processor sees the path and sets, appends and removes headers of the upstream request', async () => {
    const r = await send(`${gw.url}/h/a?q=1`, { headers: { 'x-ext-proc-append': 'client', 'x-ext-proc-remove': 'gone', 'x-other': 'kept' } });
    expect(r.status).toBe(200);
    const up = echoed(r).headers;
    expect(up['x-ext-proc-request']).toBe('seen');
    expect(up['x-ext-proc-path']).toBe('/h/a?q=1');
    expect(up['x-ext-proc-append']).toBe('client, added');
    expect(up['x-ext-proc-remove']).toBeUndefined();
    expect(up['x-other']).toBe('kept');
    // The response headers phase: the processor saw the status and set a header.
    expect(r.headers['x-ext-proc-response']).toBe('seen');
    expect(r.headers['x-ext-proc-status']).toBe('200');
  });

  it('request body BUFFERED: the processor replaces the body; the upstream gets it with its own length', async () => {
    const body = JSON.stringify({ text: `a ${MARKER} here` });
    const r = await send(`${gw.url}/rb`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(r.status).toBe(200);
    const up = echoed(r);
    expect(up.body).toBe(JSON.stringify({ text: `a ${REWRITTEN} here` }));
    expect(up.headers['content-length']).toBe(String(Buffer.byteLength(up.body)));
    expect(up.headers['x-ext-proc-request']).toBe('seen');
  });

  it('request body BUFFERED: a body over maxBufferedBytes is refused with 413, not sent', async () => {
    const before = echo.requests.length;
    const r = await send(`${gw.url}/rb`, { method: 'POST', body: 'x'.repeat(70_000) });
    expect(r.status).toBe(413);
    expect(r.headers['x-tollgate-error']).toBe('TG_EXT_PROC_BODY_TOO_LARGE');
    expect(echo.requests.length).toBe(before);
  });

  it('request body STREAMED: each chunk is replaced on its way upstream', async () => {
    const r = await send(`${gw.url}/rs`, { method: 'POST', body: `start ${MARKER} end` });
    expect(r.status).toBe(200);
    const up = echoed(r);
    expect(up.body).toBe(`start ${REWRITTEN} end`);
    // Headers were not sent (SKIP): no header edits.
    expect(up.headers['x-ext-proc-request']).toBeUndefined();
  });

  it('response headers and a BUFFERED response body: headers removed and set, the body replaced with its new length', async () => {
    const r = await send(`${gw.url}/resp`);
    expect(r.status).toBe(200);
    expect(r.body).toBe(`the backend says ${REWRITTEN} twice: ${REWRITTEN}`);
    expect(r.headers['x-ext-proc-remove']).toBeUndefined();
    expect(r.headers['x-backend']).toBe('kept');
    expect(r.headers['x-ext-proc-response']).toBe('seen');
  });

  it('a STREAMED response body is replaced chunk by chunk', async () => {
    const r = await send(`${gw.url}/rstream`);
    expect(r.status).toBe(200);
    expect(r.body).toBe(`the backend says ${REWRITTEN} twice: ${REWRITTEN}`);
  });

  it('an immediate response at the request headers answers the client; the backend is not called', async () => {
    const before = echo.requests.length;
    const r = await send(`${gw.url}/h/x`, { headers: { 'x-ext-proc-immediate': '418' } });
    expect(r.status).toBe(418);
    expect(r.headers['x-ext-proc-immediate']).toBe('answered');
    expect(r.body).toBe('answered by the processor at request headers');
    expect(echo.requests.length).toBe(before);
  });

  it('an immediate response at the response headers replaces the backend\'s answer', async () => {
    const r = await send(`${gw.url}/h/y`, { headers: { 'x-ext-proc-immediate-response': '503' } });
    expect(r.status).toBe(503);
    expect(r.body).toBe('answered by the processor at response headers');
    expect(r.headers['x-ext-proc-immediate']).toBe('answered');
  });

  describe.each([
    ['hang', 'timeout'],
    ['garbage', 'bad_response'],
    ['wrong-phase', 'bad_response'],
    ['close', 'closed'],
    ['error', 'bad_response'],
    ['many-headers', 'too_large'],
  ])('a processor that does %s', (mode, reason) => {
    it(`FailClosed: 502 TG_EXT_PROC_FAILED naming ${reason}; the backend is not called`, async () => {
      const before = echo.requests.length;
      const r = await send(`${gw.url}/h/bad`, { headers: { 'x-ext-proc-mode': mode } });
      expect(r.status).toBe(502);
      expect(r.headers['x-tollgate-error']).toBe('TG_EXT_PROC_FAILED');
      expect(r.body).toContain(reason);
      expect(echo.requests.length).toBe(before);
    });

    it('FailOpen: the request goes on unprocessed', async () => {
      const r = await send(`${gw.url}/open/bad`, { headers: { 'x-ext-proc-mode': mode } });
      expect(r.status).toBe(200);
      expect(echoed(r).headers['x-ext-proc-request']).toBeUndefined();
      expect(r.headers['x-ext-proc-response']).toBeUndefined();
    });
  });

  it('a replaced request body over maxBufferedBytes is a bad answer (too_large)', async () => {
    const r = await send(`${gw.url}/rb`, { method: 'POST', headers: { 'x-ext-proc-mode': 'big-body' }, body: 'small' });
    expect(r.status).toBe(502);
    expect(r.body).toContain('too_large');
  });

  it('a processor started with -mode close fails every request of its route (FailClosed)', async () => {
    const r = await send(`${gw.url}/closing`);
    expect(r.status).toBe(502);
    expect(r.body).toContain('closed');
  });

  it('a processor that closes its stream while a STREAMED request body passes: the upstream request is cut (502), nothing hangs', async () => {
    const r = await send(`${gw.url}/rsc`, { method: 'POST', body: `start ${MARKER} end` });
    expect(r.status).toBe(502);
    expect(r.body).not.toContain(REWRITTEN);
  });

  it('an unreachable processor: FailClosed answers 502, FailOpen goes on', async () => {
    const closed = await send(`${gw.url}/down`);
    expect(closed.status).toBe(502);
    expect(closed.headers['x-tollgate-error']).toBe('TG_EXT_PROC_FAILED');
    const open = await send(`${gw.url}/dopen`);
    expect(open.status).toBe(200);
  });

  it('tollgate_ext_proc_service_connected: 1 for a processor that answers, 0 for one nothing listens on', async () => {
    // A call through each waits for its channel's connection (opened by the config's compile).
    expect((await send(`${gw.url}/h/connected`)).status).toBe(200);
    expect((await send(`${gw.url}/closing`)).status).toBe(502);
    const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
    const connected = Object.fromEntries([...text.matchAll(/^tollgate_ext_proc_service_connected\{service="([^"]+)"\} (\d)$/gm)].map((m): [string, number] => [m[1]!, Number(m[2])]));
    const dead = gw.gateway.snapshot.binds[0]!.listeners[0]!.routes.find((r) => r.name.endsWith('down'))!.policy!.extProc!.service;
    expect(connected).toEqual({ [processor.address]: 1, [closing.address]: 1, [dead]: 0 });
  });

  it('after every misbehaviour the proxy and the processor keep serving', async () => {
    const r = await send(`${gw.url}/h/after`);
    expect(r.status).toBe(200);
    expect(echoed(r).headers['x-ext-proc-request']).toBe('seen');
  });

  it('the trace has an extProcPhase event per phase, and the policy in policySelection', async () => {
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    await send(`${gw.url}/resp`);
    const events = await trace.events;
    const phases = events.flatMap((e) => (e.message.type === 'extProcPhase' ? [e.message] : []));
    expect(phases.map((p) => [p.phase, p.result])).toEqual([
      ['responseHeaders', 'mutated'],
      ['responseBody', 'mutated'],
    ]);
    expect(phases[1]!.bodyBytes).toBe(Buffer.byteLength(`the backend says ${REWRITTEN} twice: ${REWRITTEN}`));
    const selection = events.find((e) => e.message.type === 'policySelection');
    const applied = selection?.message.type === 'policySelection' ? selection.message.effectivePolicy.extProc : null;
    expect(applied?.map((a) => a.source)).toEqual(['route']);
    expect(applied?.[0]?.config).toMatchObject({ service: processor.address, responseBodyMode: 'BUFFERED', failureMode: 'FailClosed' });
  });

  it('config_dump shows the policy with its defaults written out', async () => {
    const dump = (await (await fetch(`${gw.adminUrl}/config_dump`)).json()) as { policies: { target: { name: string }; policy: Record<string, unknown> }[] };
    const p = dump.policies.find((x) => x.target.name.endsWith('headers'));
    expect(p?.policy.extProc).toEqual({
      service: processor.address,
      requestHeaderMode: 'SEND',
      responseHeaderMode: 'SEND',
      requestBodyMode: 'NONE',
      responseBodyMode: 'NONE',
      maxBufferedBytes: 1048576,
      messageTimeoutMs: 500,
      failureMode: 'FailClosed',
    });
  });
});

describe.runIf(available.run)('extProc on an LLM route', () => {
  let llm!: MockLlm;
  useMockLlm((l) => (llm = l));
  let processor: ExtProcessor;
  let gw: TestGateway;

  beforeAll(async () => {
    processor = await startExtProc();
    gw = await startGateway((port) =>
      simpleConfig(port, [
        {
          name: 'chat',
          matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
          policies: { traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] }, extProc: { service: { host: processor.address }, messageTimeout: '2s', processingMode: { responseBodyMode: 'STREAMED' } } } },
          backends: [{ host: `127.0.0.1:${llm.port}` }],
        },
      ]),
    );
  });
  afterAll(async () => {
    await gw?.close();
    await processor?.stop();
  });

  async function reported(): Promise<number> {
    const text = await gw.gateway.runtime.metrics.registry.metrics();
    const m = /tollgate_llm_tokens_total\{route="main\/chat",model="[^"]*",source="reported"\} (\d+)/.exec(text);
    return m ? Number(m[1]) : 0;
  }

  it('an SSE stream through a STREAMED processor: every event rewritten, the stream whole, the backend\'s usage counted', async () => {
    const before = await reported();
    const body = JSON.stringify({ model: 'mock-gpt', stream: true, messages: [{ role: 'user', content: `${MARKER} ${MARKER}` }] });
    const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': '6', 'x-mock-prompt-tokens': '7' }, body });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('text/event-stream');
    expect(r.headers['x-ext-proc-response']).toBe('seen');
    const events = r.body.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    const text = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice(6)) as { choices: { delta?: { content?: string } }[] })
      .map((c) => c.choices[0]?.delta?.content ?? '')
      .join('');
    expect(text).not.toContain(MARKER);
    expect(text).toContain(REWRITTEN);
    // The usage chunk the gateway asked for was taken out for the client, and counted: 7 + 6.
    expect(await reported()).toBe(before + 13);
  });

  it('a JSON completion through the same processor: rewritten, and its usage counted', async () => {
    const before = await reported();
    const body = JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: MARKER }] });
    const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': '3', 'x-mock-prompt-tokens': '4' }, body });
    expect(r.status).toBe(200);
    const completion = JSON.parse(r.body) as { choices: { message: { content: string } }[] };
    expect(completion.choices[0]!.message.content).toContain(REWRITTEN);
    expect(await reported()).toBe(before + 7);
  });
});

describe('examples/ext-proc.yaml', () => {
  it('loads, with its processing modes and bounds in the snapshot', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/ext-proc.yaml', import.meta.url)));
    expect(loaded.snapshot.binds[0]!.listeners[0]!.routes[0]!.policy?.extProc).toEqual({
      service: '127.0.0.1:9002',
      requestHeaderMode: 'SEND',
      responseHeaderMode: 'SEND',
      requestBodyMode: 'BUFFERED',
      responseBodyMode: 'STREAMED',
      maxBufferedBytes: 262144,
      messageTimeoutMs: 500,
      failureMode: 'FailClosed',
    });
  });
});
