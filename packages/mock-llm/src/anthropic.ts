// Anthropic's Messages API answers: the message object and its SSE stream (message_start,
// content_block_start/delta/stop, ping, message_delta, message_stop), as Anthropic sends them.
// The reply is the same as the OpenAI side's (the words of the last user message); a request
// whose tool_choice asks for a tool gets a tool_use block whose input holds those words.
import type { ServerResponse } from 'node:http';
import type { MessagesRequest } from './anthropic-request.js';
import type { CompletionPlan } from './completion.js';
import type { Fault } from './knobs.js';
import { send, sendThenReset } from './sse.js';
import { wait } from './wait.js';


export interface MessagePlan {
  readonly id: string;
  readonly model: string;
  readonly words: readonly string[];
  readonly inputTokens: number;
  readonly stopReason: 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';
  readonly stopSequence: string | null;
  readonly tool: { readonly id: string; readonly name: string } | null;
  readonly reportUsage: boolean;
}

export function planMessage(request: MessagesRequest, plan: CompletionPlan, id: string): MessagePlan {
  let words = plan.words.slice(0, request.maxTokens ?? plan.words.length);
  let stopReason: MessagePlan['stopReason'] = words.length < plan.words.length || words.length === request.maxTokens ? 'max_tokens' : 'end_turn';
  let stopSequence: string | null = null;
  const at = words.findIndex((w) => request.stopSequences.includes(w));
  if (at >= 0) {
    stopSequence = words[at]!;
    words = words.slice(0, at);
    stopReason = 'stop_sequence';
  }
  const tool = request.toolCall === null ? null : { id: `toolu_${id}`, name: request.toolCall };
  if (tool && stopReason === 'end_turn') stopReason = 'tool_use';
  return { id: `msg_${id}`, model: request.model, words, inputTokens: plan.usage.prompt_tokens, stopReason, stopSequence, tool, reportUsage: plan.reportUsage };
}

function text(plan: MessagePlan): string {
  return plan.words.join(' ');
}

export function messageBody(plan: MessagePlan): string {
  const content = plan.tool ? [{ type: 'tool_use', id: plan.tool.id, name: plan.tool.name, input: { text: text(plan) } }] : [{ type: 'text', text: text(plan) }];
  return JSON.stringify({
    id: plan.id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content,
    stop_reason: plan.stopReason,
    stop_sequence: plan.stopSequence,
    ...(plan.reportUsage ? { usage: { input_tokens: plan.inputTokens, output_tokens: plan.words.length, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } } : {}),
  });
}

function event(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

export interface MessageStreamOptions {
  readonly latencyMsPerToken: number;
  readonly fault: Fault;
  readonly signal: AbortSignal;
}

/** One delta per word: text_delta for text, input_json_delta (pieces of the input's JSON) for a tool call. */
function deltas(plan: MessagePlan): string[] {
  if (!plan.tool) return plan.words.map((w, i) => event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: i === 0 ? w : ` ${w}` } }));
  const json = JSON.stringify({ text: text(plan) });
  const parts = plan.words.length > 1 ? [json.slice(0, 9), json.slice(9)] : [json];
  return parts.map((p) => event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: p } }));
}

export async function streamMessage(res: ServerResponse, plan: MessagePlan, options: MessageStreamOptions): Promise<void> {
  const { signal, fault } = options;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': plan.id });
  const usage = (output: number) => (plan.reportUsage ? { usage: { input_tokens: plan.inputTokens, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } } : {});
  const start = event('message_start', {
    type: 'message_start',
    message: { id: plan.id, type: 'message', role: 'assistant', model: plan.model, content: [], stop_reason: null, stop_sequence: null, ...usage(1) },
  });
  if (!(await send(res, start, signal))) return;
  const block = plan.tool ? { type: 'tool_use', id: plan.tool.id, name: plan.tool.name, input: {} } : { type: 'text', text: '' };
  if (!(await send(res, event('content_block_start', { type: 'content_block_start', index: 0, content_block: block }), signal))) return;
  if (!(await send(res, event('ping', { type: 'ping' }), signal))) return;
  for (const d of deltas(plan)) {
    if (options.latencyMsPerToken > 0 && !(await wait(options.latencyMsPerToken, signal))) return;
    if (signal.aborted) return;
    if (fault === 'reset-mid-stream') return sendThenReset(res, d);
    if (fault === 'garbage') {
      res.end(`${d}event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":\n\n`);
      return;
    }
    if (!(await send(res, d, signal))) return;
    if (fault === 'truncate') {
      res.end();
      return;
    }
  }
  if (!(await send(res, event('content_block_stop', { type: 'content_block_stop', index: 0 }), signal))) return;
  const delta = { type: 'message_delta', delta: { stop_reason: plan.stopReason, stop_sequence: plan.stopSequence }, ...(plan.reportUsage ? { usage: { output_tokens: plan.words.length } } : {}) };
  if (!(await send(res, event('message_delta', delta), signal))) return;
  res.end(event('message_stop', { type: 'message_stop' }));
}

/** Anthropic's error body: {"type":"error","error":{type, message}}. */
export function anthropicErrorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

/** Anthropic's error type for a status. */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}
