import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { CompletionPlan } from './completion.js';
import { wait } from './wait.js';
import type { Fault } from './knobs.js';

export interface StreamOptions {
  /** `stream_options.include_usage`: end with a usage-only chunk (and `usage: null` on the others), as OpenAI does. */
  includeUsage: boolean;
  /** Pause before each content chunk, so a proxy under test sees chunks arrive one by one. */
  latencyMsPerToken: number;
  /**
   * `x-mock-error`: reset-mid-stream destroys the socket once the first content chunk is on the
   * wire; garbage sends an event whose data is not JSON after it and ends; truncate ends the
   * response cleanly after it (no finish_reason, usage or [DONE]).
   */
  fault: Fault;
  /** Aborted when the client goes away or the server closes; stops the stream. */
  signal: AbortSignal;
}

interface Delta {
  role?: 'assistant';
  content?: string;
}

function event(data: string): string {
  return `data: ${data}\n\n`;
}

/**
 * Writes one SSE event. Each chunk is its own write (no cork), so it leaves as soon as it is
 * produced. Returns false when the stream was aborted while waiting for a slow reader to drain.
 */
export async function send(res: ServerResponse, data: string, signal: AbortSignal): Promise<boolean> {
  if (res.write(data)) return true;
  // Honour backpressure: a slow reader must not make us buffer the whole reply.
  try {
    await once(res, 'drain', { signal });
    return true;
  } catch {
    return false;
  }
}

/** Writes `data`, waits until it has been handed to the kernel, then destroys the socket. */
export async function sendThenReset(res: ServerResponse, data: string): Promise<void> {
  await new Promise<void>((resolve) => {
    res.write(data, () => resolve());
  });
  res.destroy();
}

export async function streamCompletion(res: ServerResponse, plan: CompletionPlan, options: StreamOptions): Promise<void> {
  const { signal } = options;
  const withUsage = options.includeUsage && plan.reportUsage;
  // Every chunk of a reply shares all fields but the delta and finish_reason: serialise the shared
  // parts once and splice per chunk, instead of a JSON.stringify per token on the hot path.
  const head = `data: {"id":${JSON.stringify(plan.id)},"object":"chat.completion.chunk","created":${plan.created},"model":${JSON.stringify(plan.model)},"system_fingerprint":"fp_mock","choices":[{"index":0,"delta":`;
  // OpenAI puts `usage: null` on every chunk but the last when include_usage is on.
  const tail = withUsage ? '}],"usage":null}\n\n' : '}]}\n\n';
  const chunk = (delta: Delta, finishReason: 'stop' | null): string =>
    `${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${finishReason === null ? 'null' : '"stop"'}${tail}`;

  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-request-id': plan.id,
  });

  // OpenAI's first chunk names the role and carries no text.
  const roleChunk = chunk({ role: 'assistant', content: '' }, null);
  const { words } = plan;
  if (words.length === 0) {
    if (options.fault === 'reset-mid-stream') return sendThenReset(res, roleChunk);
    if (!(await send(res, roleChunk, signal))) return;
    if (!(await send(res, chunk({}, 'stop'), signal))) return;
  } else if (!(await send(res, roleChunk, signal))) {
    return;
  }

  for (let i = 0; i < words.length; i++) {
    if (options.latencyMsPerToken > 0 && !(await wait(options.latencyMsPerToken, signal))) return;
    if (signal.aborted) return;
    const content = chunk({ content: i === 0 ? `${words[i]}` : ` ${words[i]}` }, i === words.length - 1 ? 'stop' : null);
    if (options.fault === 'reset-mid-stream') return sendThenReset(res, content);
    if (options.fault === 'garbage') {
      res.end(`${content}data: {"id":${JSON.stringify(plan.id)},"choices":[{"delta":\n\n`);
      return;
    }
    if (!(await send(res, content, signal))) return;
    if (options.fault === 'truncate') {
      res.end();
      return;
    }
  }

  if (withUsage) {
    const usageChunk = {
      id: plan.id,
      object: 'chat.completion.chunk',
      created: plan.created,
      model: plan.model,
      system_fingerprint: 'fp_mock',
      choices: [],
      usage: plan.usage,
    };
    if (!(await send(res, event(JSON.stringify(usageChunk)), signal))) return;
  }
  res.end(event('[DONE]'));
}
