// The error body an OpenAI-style client understands: {"error": {message, type, param, code}},
// OpenAI's own shape, from which the official clients (Node and Python `openai`) take the
// message of the exception they raise for the status (AuthenticationError for 401,
// PermissionDeniedError for 403). Given to the gateway's authentication and authorization
// refusals when the request looks like an API call; curl and browsers keep the plain text.
import type { IncomingHttpHeaders } from 'node:http';

/** The media type of a header value, lower case, without parameters. */
function mediaType(value: string): string {
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/** Whether an Accept value names application/json with a weight above 0 (RFC 9110 §12.5.1). */
function acceptsJson(accept: string): boolean {
  // Bounded work: a header is at most the server's header size, and only its ranges are read.
  for (const range of accept.split(',')) {
    if (mediaType(range) !== 'application/json') continue;
    const q = /;\s*q\s*=\s*([0-9.]+)/i.exec(range);
    if (!q || Number(q[1]) > 0) return true;
  }
  return false;
}

/** An OpenAI-style call: a JSON body (Content-Type application/json), or Accept: application/json. */
export function wantsJsonError(headers: IncomingHttpHeaders): boolean {
  const type = headers['content-type'];
  if (type !== undefined && mediaType(type) === 'application/json') return true;
  const accept = headers.accept;
  return accept !== undefined && acceptsJson(accept);
}

/** OpenAI's `error.type` by status; the catalog code goes in `error.code`. */
function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  return 'invalid_request_error';
}

export function openAiErrorBody(status: number, code: string, message: string): string {
  return JSON.stringify({ error: { message, type: errorType(status), param: null, code } });
}
