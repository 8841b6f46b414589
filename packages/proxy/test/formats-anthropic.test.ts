// OpenAI Chat Completions clients routed to an Anthropic backend (provider.type Anthropic):
// the official `openai` client against the gateway, mock-llm's Messages API behind it, over
// real sockets. The request mock-llm receives is Anthropic's (mock-llm refuses fields Anthropic
// does not know), the answers the client gets are OpenAI's, streamed and not, with tools;
// token budgets are charged from the translated usage; a garbage or truncated answer is a
// clear error and the gateway keeps serving. Clients speaking Anthropic's own API (the official
// `@anthropic-ai/sdk`) pass through, their usage read from Anthropic's format.
import Anthropic from '@anthropic-ai/sdk';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedAfterEach, openTrace, send, simpleConfig, startGateway, type TestGateway } from './helpers.js';

let llm: MockLlm;
/** Bodies mock-llm received on /v1/messages, last last. */
const received: { url: string; body: Record<string, unknown> }[] = [];
beforeAll(async () => {
  llm = await startMockLlm({ port: 0, onRequestBody: (r, body) => received.push({ url: r.url, body: JSON.parse(body.toString('utf8')) as Record<string, unknown> }) });
});
afterAll(() => llm.close());
const cleanups = closedAfterEach();

const lastBody = () => received[received.length - 1]!;

async function gateway(tokens?: number): Promise<TestGateway> {
  const policies = tokens === undefined ? undefined : { traffic: { rateLimit: { local: [{ tokens, unit: 'Hours' }] } } };
  const route = { name: 'chat', ...(policies ? { policies } : {}), backends: [{ host: `127.0.0.1:${llm.port}`, provider: { type: 'Anthropic' } }] };
  const gw = await startGateway((port) => simpleConfig(port, [route]));
  cleanups.push(() => gw.close());
  return gw;
}

function openai(gw: TestGateway, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: headers });
}

async function tokensCounted(gw: TestGateway, model: string, source: 'reported' | 'estimated'): Promise<number | null> {
  const text = await gw.gateway.runtime.metrics.registry.metrics();
  const m = new RegExp(`tollgate_llm_tokens_total\\{route="main/chat",model="${model}",source="${source}"\\} (\\d+)`).exec(text);
  return m ? Number(m[1]) : null;
}

const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object', properties: { text: { type: 'string' } } } } },
];

describe('OpenAI client to an Anthropic backend: requests', () => {
  it('sends Anthropic a Messages request: system, max_tokens (default 4096), stop, temperature, top_p, metadata; to /v1/messages', async () => {
    const gw = await gateway();
    await openai(gw).chat.completions.create({
      model: 'claude-test',
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in English.' }] },
        { role: 'user', content: 'hello there gateway' },
      ],
      stop: ['STOP'],
      temperature: 0.5,
      top_p: 0.9,
      user: 'alice',
    });
    const { url, body } = lastBody();
    expect(url).toBe('/v1/messages');
    expect(body).toEqual({
      model: 'claude-test',
      max_tokens: 4096,
      system: 'Be terse.\n\nAnswer in English.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there gateway' }] }],
      stop_sequences: ['STOP'],
      temperature: 0.5,
      top_p: 0.9,
      metadata: { user_id: 'alice' },
    });
    await openai(gw).chat.completions.create({ model: 'c', max_completion_tokens: 7, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    expect(lastBody().body).toEqual({ model: 'c', max_tokens: 7, stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
  });

  it('translates tools, tool_choice, assistant tool calls and tool results', async () => {
    const gw = await gateway();
    await openai(gw).chat.completions.create({
      model: 'c',
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      parallel_tool_calls: false,
      messages: [
        { role: 'user', content: 'look up gateway' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"text":"gateway"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'a toll gate' },
        { role: 'user', content: 'thanks' },
      ],
    });
    const { body } = lastBody();
    expect(body.tools).toEqual([{ name: 'lookup', description: 'Looks a word up', input_schema: { type: 'object', properties: { text: { type: 'string' } } } }]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'lookup', disable_parallel_tool_use: true });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'look up gateway' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'lookup', input: { text: 'gateway' } }] },
      // The tool result and the next user message are one user turn: Anthropic's turns alternate.
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'a toll gate' }, { type: 'text', text: 'thanks' }] },
    ]);
    await openai(gw).chat.completions.create({ model: 'c', tools: TOOLS, tool_choice: 'required', messages: [{ role: 'user', content: 'x' }] });
    expect(lastBody().body.tool_choice).toEqual({ type: 'any' });
  });

  const refusals: [string, Record<string, unknown>, string][] = [
    ['n above 1', { n: 2 }, 'n'],
    ['logprobs', { logprobs: true }, 'logprobs'],
    ['response_format json_schema', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'response_format'],
    ['a field without a counterpart', { seed: 7 }, 'seed'],
    ['temperature above 1', { temperature: 1.5 }, 'temperature'],
    ['an audio content part', { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AA', format: 'wav' } }] }] }, 'messages[0].content[0].type'],
    ['tool call arguments that are not a JSON object', { messages: [{ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '[1' } }] }] }, 'messages[0].tool_calls[0].function.arguments'],
    ['a legacy function message', { messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
  ];
  for (const [what, fields, param] of refusals) {
    it(`refuses ${what} with 400 in OpenAI's error shape naming ${param}, without calling the backend`, async () => {
      const gw = await gateway();
      const before = llm.requestCount;
      const err = await openai(gw)
        .chat.completions.create({ model: 'c', messages: [{ role: 'user', content: 'hi' }], ...fields } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      const e = err as InstanceType<typeof OpenAI.BadRequestError>;
      expect(e.status).toBe(400);
      expect(e.code).toBe('TG_FORMAT_UNSUPPORTED');
      expect(e.param).toBe(param);
      expect(e.message).toContain(param);
      expect(e.headers.get('x-tollgate-error')).toBe('TG_FORMAT_UNSUPPORTED');
      expect(llm.requestCount).toBe(before);
    });
  }
});

describe('OpenAI client to an Anthropic backend: answers', () => {
  it('a message becomes a chat.completion: content, finish_reason, usage, id and model', async () => {
    const gw = await gateway();
    const c = await openai(gw, { 'x-mock-prompt-tokens': '12', 'x-mock-completion-tokens': '3' }).chat.completions.create({ model: 'claude-test', messages: [{ role: 'user', content: 'alpha beta gamma delta' }] });
    expect(c.object).toBe('chat.completion');
    expect(c.id).toMatch(/^msg_/);
    expect(c.model).toBe('claude-test');
    expect(c.choices).toHaveLength(1);
    expect(c.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'alpha beta gamma' });
    expect(c.choices[0]!.finish_reason).toBe('stop');
    expect(c.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 });
  });

  it('stop reasons become finish reasons: max_tokens is length, stop_sequence is stop, tool_use is tool_calls', async () => {
    const gw = await gateway();
    const client = openai(gw);
    const long = await client.chat.completions.create({ model: 'c', max_tokens: 2, messages: [{ role: 'user', content: 'one two three four' }] });
    expect(long.choices[0]!.finish_reason).toBe('length');
    expect(long.choices[0]!.message.content).toBe('one two');
    const stopped = await client.chat.completions.create({ model: 'c', stop: 'three', messages: [{ role: 'user', content: 'one two three four' }] });
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    expect(stopped.choices[0]!.message.content).toBe('one two');
    const tool = await openai(gw, { 'x-mock-completion-tokens': '2' }).chat.completions.create({ model: 'c', tools: TOOLS, tool_choice: 'required', messages: [{ role: 'user', content: 'toll gate' }] });
    expect(tool.choices[0]!.finish_reason).toBe('tool_calls');
    expect(tool.choices[0]!.message.content).toBeNull();
    const call = tool.choices[0]!.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    expect(call.id).toMatch(/^toolu_/);
    if (call.type !== 'function') throw new Error('a function call');
    expect(call.function.name).toBe('lookup');
    expect(JSON.parse(call.function.arguments)).toEqual({ text: 'toll gate' });
  });

  it('a stream becomes chat.completion.chunks: text, finish_reason, a usage chunk when asked, [DONE]', async () => {
    const gw = await gateway();
    const stream = await openai(gw, { 'x-mock-prompt-tokens': '9', 'x-mock-completion-tokens': '4' }).chat.completions.create({
      model: 'claude-test',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'red green blue' }],
    });
    let text = '';
    const finishes: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('claude-test');
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        if (choice.finish_reason) finishes.push(choice.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('red green blue red');
    expect(finishes).toEqual(['stop']);
    expect(usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 });
    // Without include_usage no usage chunk reaches the client; the stream still ends with [DONE].
    const raw = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'c', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    expect(raw.headers['content-type']).toContain('text/event-stream');
    expect(raw.body).not.toContain('"usage"');
    expect(raw.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('a streamed tool call arrives as tool_calls deltas whose arguments join into the input', async () => {
    const gw = await gateway();
    const stream = await openai(gw, { 'x-mock-completion-tokens': '2' }).chat.completions.create({ model: 'c', stream: true, tools: TOOLS, tool_choice: 'required', messages: [{ role: 'user', content: 'toll gate' }] });
    let args = '';
    let name = '';
    let finish = '';
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        for (const call of choice.delta.tool_calls ?? []) {
          expect(call.index).toBe(0);
          name += call.function?.name ?? '';
          args += call.function?.arguments ?? '';
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    expect(name).toBe('lookup');
    expect(JSON.parse(args)).toEqual({ text: 'toll gate' });
    expect(finish).toBe('tool_calls');
  });

  it("an Anthropic error status reaches the client with OpenAI's error shape", async () => {
    const gw = await gateway();
    const err = await openai(gw, { 'x-mock-status': '429' })
      .chat.completions.create({ model: 'c', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as Error).message).toContain('injected status 429');
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).type).toBe('rate_limit_error');
    // The body itself is OpenAI's shape, not Anthropic's {type: "error", error: {...}}.
    const raw = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-mock-status': '529' }, body: JSON.stringify({ model: 'c', messages: [{ role: 'user', content: 'hi' }] }) });
    expect(raw.status).toBe(529);
    expect(JSON.parse(raw.body)).toEqual({ error: { message: 'mock-llm: injected status 529 (x-mock-status)', type: 'overloaded_error', param: null, code: 'overloaded_error' } });
  });
});

describe('the admin API', () => {
  it("shows a backend's provider in /config_dump", async () => {
    const gw = await gateway();
    const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { backends: { host: string; provider?: unknown }[] };
    expect(dump.backends).toEqual([expect.objectContaining({ host: '127.0.0.1', provider: expect.objectContaining({ type: 'Anthropic' }) as unknown })]);
  });
});

describe('traces of translated requests', () => {
  it("show the request as the Anthropic backend gets it in the final request, and the translated answer's status", async () => {
    const gw = await gateway();
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    await openai(gw).chat.completions.create({ model: 'traced', messages: [{ role: 'user', content: 'hi' }] });
    const events = await trace.events;
    const snapshots = events.flatMap((e) => (e.message.type === 'requestSnapshot' ? [e.message] : []));
    expect(snapshots.find((m) => m.stage === 'initial request')!.requestState.request.path).toBe('/v1/chat/completions');
    const final = snapshots.find((m) => m.stage === 'final request')!.requestState.request;
    expect(final.path).toBe('/v1/messages');
    expect(final.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(lastBody().body))));
    expect(events.some((e) => e.message.type === 'backendCallResult' && e.message.status === 200)).toBe(true);
  });
});

describe('token budgets of translated requests', () => {
  it('are charged the translated usage, streamed or not, with or without include_usage', async () => {
    const gw = await gateway(1_000_000);
    const client = openai(gw, { 'x-mock-prompt-tokens': '20', 'x-mock-completion-tokens': '5' });
    await client.chat.completions.create({ model: 'budget', messages: [{ role: 'user', content: 'a b c d e' }] });
    expect(await tokensCounted(gw, 'budget', 'reported')).toBe(25);
    const stream = await client.chat.completions.create({ model: 'budget', stream: true, messages: [{ role: 'user', content: 'a b c d e' }] });
    let sawUsage = false;
    for await (const chunk of stream) if (chunk.usage) sawUsage = true;
    // The gateway wanted the usage chunk for the budget; the client did not ask for it.
    expect(sawUsage).toBe(false);
    expect(await tokensCounted(gw, 'budget', 'reported')).toBe(50);
    const asked = await client.chat.completions.create({ model: 'budget', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'a b c d e' }] });
    for await (const chunk of asked) if (chunk.usage) sawUsage = true;
    expect(sawUsage).toBe(true);
    expect(await tokensCounted(gw, 'budget', 'reported')).toBe(75);
  });

  it('refuse the request after the budget is spent', async () => {
    const gw = await gateway(30);
    const client = openai(gw, { 'x-mock-prompt-tokens': '20', 'x-mock-completion-tokens': '15' });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const err = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
  });
});

describe('an Anthropic backend that misbehaves', () => {
  it('a body that is not JSON is a 502 TG_FORMAT_BAD_RESPONSE in OpenAI shape; tokens estimated; the gateway keeps serving', async () => {
    const gw = await gateway(1_000_000);
    for (const fault of ['garbage', 'truncate']) {
      const err = await openai(gw, { 'x-mock-error': fault })
        .chat.completions.create({ model: 'bad', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.InternalServerError);
      const e = err as InstanceType<typeof OpenAI.InternalServerError>;
      expect(e.status).toBe(502);
      expect(e.code).toBe('TG_FORMAT_BAD_RESPONSE');
      expect(e.headers.get('x-tollgate-error')).toBe('TG_FORMAT_BAD_RESPONSE');
    }
    expect(await tokensCounted(gw, 'bad', 'estimated')).toBeGreaterThan(0);
    const ok = await openai(gw).chat.completions.create({ model: 'bad', messages: [{ role: 'user', content: 'still here' }] });
    expect(ok.choices[0]!.message.content).toContain('still here');
  });

  for (const fault of ['garbage', 'truncate'] as const) {
    it(`a stream that turns ${fault} ends with an error chunk the client raises; what was seen is charged`, async () => {
      const gw = await gateway(1_000_000);
      const stream = await openai(gw, { 'x-mock-error': fault, 'x-mock-completion-tokens': '50' }).chat.completions.create({ model: 'bad', stream: true, messages: [{ role: 'user', content: 'words words words' }] });
      let text = '';
      const err = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('TG_FORMAT_BAD_RESPONSE');
      expect(text).toBe('words');
      // No usage came: estimated, at least what the request was admitted for.
      expect(await tokensCounted(gw, 'bad', 'estimated')).toBeGreaterThan(0);
      const raw = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-mock-error': fault }, body: JSON.stringify({ model: 'bad', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
      expect(raw.body.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect((await openai(gw).chat.completions.create({ model: 'bad', messages: [{ role: 'user', content: 'fine' }] })).choices[0]!.message.content).toContain('fine');
    });
  }
});

describe('Anthropic clients pass through', () => {
  function anthropic(gw: TestGateway, headers: Record<string, string> = {}): Anthropic {
    return new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: headers });
  }

  it('a message and a stream reach the client as Anthropic sent them; usage charged from input and output tokens', async () => {
    const gw = await gateway(1_000_000);
    const client = anthropic(gw, { 'x-mock-prompt-tokens': '11', 'x-mock-completion-tokens': '4' });
    const m = await client.messages.create({ model: 'pass', max_tokens: 100, system: 'terse', messages: [{ role: 'user', content: 'one two three four' }] });
    expect(m.type).toBe('message');
    expect(m.content).toEqual([{ type: 'text', text: 'one two three four' }]);
    expect(m.usage).toMatchObject({ input_tokens: 11, output_tokens: 4 });
    expect(lastBody().body).toEqual({ model: 'pass', max_tokens: 100, system: 'terse', messages: [{ role: 'user', content: 'one two three four' }] });
    expect(await tokensCounted(gw, 'pass', 'reported')).toBe(15);
    // Streamed, on a metered route: no stream_options added (Anthropic refuses unknown fields).
    const stream = client.messages.stream({ model: 'pass', max_tokens: 100, messages: [{ role: 'user', content: 'one two three four' }] });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'one two three four' }]);
    expect(final.usage.output_tokens).toBe(4);
    expect(lastBody().body).not.toHaveProperty('stream_options');
    expect(await tokensCounted(gw, 'pass', 'reported')).toBe(30);
  });
});
