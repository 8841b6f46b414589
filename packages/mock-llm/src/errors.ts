// The mock's error catalog and its error bodies. Bodies are shaped like OpenAI's (`error` with
// message, type, param, code) so the official clients map them to the right error class; the
// catalog code goes in the `x-tollgate-error` header, where a test or a log can read it.
import type { ServerResponse } from 'node:http';
import { defineErrors } from '@tollgate/kit';

export const MOCK_ERRORS = defineErrors({
  notFound: {
    code: 'TG_MOCK_NOT_FOUND',
    status: 404,
    message: 'Invalid URL ({method} {path})',
    hint: 'the mock serves POST /v1/chat/completions, POST /v1/messages, GET /v1/models, GET /v1/models/<id> and GET /healthz',
  },
  modelNotFound: {
    code: 'TG_MOCK_MODEL_NOT_FOUND',
    status: 404,
    message: 'The model `{model}` does not exist or you do not have access to it. Available models: {models}.',
    hint: 'ask for a model given with --model, or start the mock without --model to accept any name',
  },
  unauthorized: {
    code: 'TG_MOCK_UNAUTHORIZED',
    status: 401,
    message: 'Incorrect API key provided in {header}.',
    hint: 'send the key the mock was started with (its apiKey option) in the header it names',
  },
  invalidRequest: {
    code: 'TG_MOCK_INVALID_REQUEST',
    status: 400,
    message: '{reason}',
    hint: 'send a chat completion body: {model, messages: [{role, content}], stream?, stream_options?, max_tokens?}',
  },
  invalidHeader: {
    code: 'TG_MOCK_INVALID_HEADER',
    status: 400,
    message: '{reason}',
    hint: 'mock-llm --help lists the x-mock-* headers and their ranges',
  },
  bodyTooLarge: {
    code: 'TG_MOCK_BODY_TOO_LARGE',
    status: 413,
    message: 'Request body too large: the limit is {limit} bytes. Send a smaller request.',
    hint: 'send a smaller body, or start the mock with a larger maxBodyBytes',
  },
  injectedStatus: {
    code: 'TG_MOCK_INJECTED_STATUS',
    message: 'mock-llm: injected status {status} (x-mock-status)',
    hint: 'the request asked for this status with x-mock-status; drop the header for a normal answer',
  },
  internal: {
    code: 'TG_MOCK_INTERNAL',
    status: 500,
    message: 'mock-llm internal error: {reason}',
    hint: 'a bug in the mock: report it with the request that caused it',
  },
  listen: {
    code: 'TG_MOCK_LISTEN',
    message: 'cannot listen on {address}: {reason}',
    hint: 'pick a free port (--port 0 picks one) or stop the process that holds it',
  },
  usage: {
    code: 'TG_MOCK_USAGE',
    message: '{problem}',
    hint: 'run mock-llm --help for the flags',
  },
  option: {
    code: 'TG_MOCK_OPTION_INVALID',
    message: 'mock-llm: {name} must be an integer from {min} to {max}, got {value}',
    hint: 'pass startMockLlm() options within the ranges mock-llm --help gives',
  },
});

export type MockErrorCode = (typeof MOCK_ERRORS)[keyof typeof MOCK_ERRORS]['code'];

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
  const message = MOCK_ERRORS.injectedStatus.create({ status }).message;
  if (status === 429) return { message, type: 'requests', param: null, code: 'rate_limit_exceeded' };
  if (status === 401) return { message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' };
  if (status >= 500) return { message, type: 'server_error', param: null, code: null };
  return invalidRequest(message);
}

export function sendError(res: ServerResponse, status: number, error: OpenAiError, code: MockErrorCode, extraHeaders: Record<string, string> = {}): void {
  const body = JSON.stringify({ error });
  res.writeHead(status, {
    ...extraHeaders,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-tollgate-error': code,
  });
  res.end(body);
}
