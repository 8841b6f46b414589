// Which API format a request speaks and what the backend it goes to speaks: the one place that
// decides whether a request is translated (an OpenAI Chat Completions client sent to an
// Anthropic backend) and how usage is read from its response (Anthropic's format for a client
// speaking Anthropic's Messages API itself). Decided by the client's path, as it arrived.
import type { BackendIR, RouteIR } from '@tollgate/api';

/** What the response's usage looks like. */
export type UsageFormat = 'openai' | 'anthropic';

/** The client's path is OpenAI's Chat Completions (`…/v1/chat/completions`). */
export function speaksChat(path: string): boolean {
  return path.endsWith('/v1/chat/completions');
}

/** The client's path is Anthropic's Messages API (`…/v1/messages`): its body and usage are Anthropic's. */
export function speaksMessages(path: string): boolean {
  return path.endsWith('/v1/messages');
}

function isAnthropic(backend: BackendIR): boolean {
  return (backend.kind === 'static' || backend.kind === 'external') && backend.provider?.type === 'Anthropic';
}

/** True when a request on this path to this backend is translated from Chat Completions to Messages. */
export function translates(backend: BackendIR, path: string): boolean {
  return isAnthropic(backend) && speaksChat(path);
}

/** True when some backend of the route would translate the request: its body must be read whole. */
export function routeTranslates(route: RouteIR, path: string): boolean {
  return speaksChat(path) && route.backends.some(isAnthropic);
}

export function usageFormat(path: string): UsageFormat {
  return speaksMessages(path) ? 'anthropic' : 'openai';
}

/** Where a translated request goes on an Anthropic backend. */
export const MESSAGES_PATH = '/v1/messages';
