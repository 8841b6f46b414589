import type { ServerResponse } from 'node:http';

/** The `error` object OpenAI puts in every non-2xx body; clients read `message`, `type`, `code`. */
export interface OpenAiError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

export function invalidRequest(message: string, param: string | null = null, code: string | null = null): OpenAiError {
  return { message, type: 'invalid_request_error', param, code };
}

/**
 * The body an upstream answers a status with, shaped like OpenAI's so the official clients map it
 * to the right error class (RateLimitError, InternalServerError, ...).
 */
export function injectedError(status: number): OpenAiError {
  const message = `mock-llm: injected status ${status} (x-mock-status)`;
  if (status === 429) return { message, type: 'requests', param: null, code: 'rate_limit_exceeded' };
  if (status === 401) return { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' };
  if (status >= 500) return { message, type: 'server_error', param: null, code: null };
  return invalidRequest(message);
}

export function sendError(res: ServerResponse, status: number, error: OpenAiError): void {
  const body = JSON.stringify({ error });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}
