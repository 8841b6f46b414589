import type { Knobs } from './knobs.js';
import type { ChatRequest } from './request.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** What one request will answer: the words (one per token and per stream chunk) and its usage. */
export interface CompletionPlan {
  id: string;
  created: number;
  model: string;
  words: string[];
  usage: Usage;
  /** False when `x-mock-usage: none` asked to leave usage out. */
  reportUsage: boolean;
}

/** Used when the last user message has no words to echo, so replies are never empty by accident. */
const FALLBACK_WORDS = ['mock', 'reply', 'from', 'tollgate', 'mock-llm'];

/** Same prompt, same reply: the words of the last user message, repeated until `count` words. */
export function replyWords(lastUserText: string, count: number): string[] {
  const source: string[] = [];
  // Only the first `count` words can appear in the reply; stop scanning a long prompt there.
  for (const match of lastUserText.matchAll(/[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu)) {
    if (source.length === count) break;
    source.push(match[0]);
  }
  const vocabulary = source.length > 0 ? source : FALLBACK_WORDS;
  const words = new Array<string>(count);
  for (let i = 0; i < count; i++) words[i] = vocabulary[i % vocabulary.length] ?? '';
  return words;
}

/** Rough rule of thumb for English text (about four characters per token), fixed so tests can compute it. */
export function estimatePromptTokens(promptChars: number): number {
  return Math.ceil(promptChars / 4);
}

export function planCompletion(
  request: ChatRequest,
  knobs: Knobs,
  defaultCompletionTokens: number,
  id: string,
): CompletionPlan {
  const promptTokens = knobs.promptTokens ?? estimatePromptTokens(request.promptChars);
  const completionTokens = knobs.completionTokens ?? Math.min(defaultCompletionTokens, request.maxTokens ?? Infinity);
  return {
    id,
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    words: replyWords(request.lastUserText, completionTokens),
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
    reportUsage: !knobs.omitUsage,
  };
}

export function completionText(plan: CompletionPlan): string {
  return plan.words.join(' ');
}

/** The non-streaming `chat.completion` object, field for field as OpenAI sends it. */
export function completionBody(plan: CompletionPlan): string {
  return JSON.stringify({
    id: plan.id,
    object: 'chat.completion',
    created: plan.created,
    model: plan.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: completionText(plan), refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    ...(plan.reportUsage ? { usage: plan.usage } : {}),
    system_fingerprint: 'fp_mock',
  });
}
