// The request side of a metered LLM route: the body is read (it is small: a chat request),
// parsed, and when the client streams without asking for usage, `stream_options.include_usage`
// is added so the backend reports usage in its last chunk (the meter then removes that chunk,
// which the client did not ask for). A body that is not JSON, or too large to hold, is
// forwarded untouched and the request is counted by estimate. Every byte held is taken from
// the process's budget (BodyAccount) as it arrives: one that does not fit refuses the request.
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { DEFAULT_MAX_REQUEST_BODY_BYTES } from '@tollgate/api';
import { ClientGone, ERRORS, RequestFailure } from '../errors.js';
import { nestsDeeperThan, scanTopLevelObject } from './json-scan.js';

/** Default of config.maxRequestBodyBytes. */
export const MAX_LLM_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_BYTES;

/** Deeper bodies are refused: no chat request nests this far, and depth is what exhausts stacks. */
export const MAX_JSON_DEPTH = 128;

export interface LlmRequest {
  /** What to send upstream. */
  readonly body: Buffer | Readable;
  /** Parsed fields, null when the body is not a JSON object. */
  readonly model: string | null;
  readonly stream: boolean;
  /** `max_completion_tokens`, or the older `max_tokens`, when set to a non-negative integer. */
  readonly maxTokens: number | null;
  /** True when the gateway added include_usage: the usage-only chunk must not reach the client. */
  readonly injectedUsage: boolean;
  /** Prompt text for estimation (message contents, or the raw body when not JSON). */
  readonly promptText: string;
  /** Why the body was not parsed, for the debug log. */
  readonly unparsed: string | null;
}

function contentOf(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  return messages
    .map((m) => {
      const c = (m as { content?: unknown } | null)?.content;
      if (typeof c === 'string') return c;
      if (Array.isArray(c)) return c.map((p) => (typeof (p as { text?: unknown })?.text === 'string' ? (p as { text: string }).text : '')).join(' ');
      return '';
    })
    .join('\n');
}

/** How much of a body to read, and what to do with a larger one. */
export interface BodyLimit {
  readonly maxBytes: number;
  /**
   * True on a metered route: a larger body is refused (413), since an unparsed body would
   * escape the token budget. Otherwise it is forwarded untouched and estimated.
   */
  readonly refuseLarger: boolean;
  /**
   * True on a metered route: a streaming request that does not ask for usage is made to (the
   * meter removes the usage chunk again). Elsewhere (a body read for authorization rules or
   * mirrors) the body goes upstream as the client wrote it, since nothing would remove it.
   */
  readonly askUsage: boolean;
}

/** Where the bytes of a body being read are taken from: the process's budget (pipeline/body-budget.ts). */
export interface BodyAccount {
  /** Takes `n` more bytes for this request's body; false when the budget cannot hold them. */
  takeBodyBytes(n: number): boolean;
}

function tooLarge(limit: BodyLimit): RequestFailure {
  return new RequestFailure(ERRORS.requestBodyTooLarge, `request body larger than ${limit.maxBytes} bytes on a route that counts LLM tokens`, { headers: { connection: 'close' } });
}

// The budget frees as requests in flight end, within a second or so for most.
const BUDGET_FULL_HEADERS = { connection: 'close', 'retry-after': '1' };

function budgetFull(): RequestFailure {
  return new RequestFailure(ERRORS.bodyBudgetFull, 'request-body bytes held by the process are at config.maxBufferedRequestBytes', { headers: BUDGET_FULL_HEADERS });
}

export function readLlmRequest(req: IncomingMessage, limit: BodyLimit, account: BodyAccount): Promise<LlmRequest> {
  const declared = Number(req.headers['content-length']);
  if (limit.refuseLarger && declared > limit.maxBytes) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      const fits = account.takeBodyBytes(c.length);
      if (fits) {
        size += c.length;
        chunks.push(c);
        if (size <= limit.maxBytes) return;
      }
      req.off('data', onData);
      req.off('end', onEnd);
      req.pause();
      if (!fits || limit.refuseLarger) {
        reject(fits ? tooLarge(limit) : budgetFull());
        return;
      }
      // Too large to hold: replay what was read, then stream the rest untouched.
      const body = new PassThrough();
      for (const chunk of chunks) body.write(chunk);
      req.pipe(body);
      req.resume();
      resolve({ body, model: null, stream: false, maxTokens: null, injectedUsage: false, promptText: '', unparsed: `body larger than ${limit.maxBytes} bytes` });
    };
    // Runs in a stream event handler: anything thrown here must reject this request, never
    // escape to the process.
    const onEnd = () => {
      try {
        resolve(parse(Buffer.concat(chunks), limit.askUsage));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    };
    req.on('data', onData);
    req.on('end', onEnd);
    // A client that goes away mid-body is not a bad request: nobody is left to answer.
    req.on('error', (err) => reject(req.destroyed && !req.complete ? new ClientGone(err.message, { cause: err }) : new RequestFailure(ERRORS.requestBodyUnreadable, err.message, { cause: err })));
  });
}

export function parse(raw: Buffer, askUsage = true): LlmRequest {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    return { body: raw, model: null, stream: false, maxTokens: null, injectedUsage: false, promptText: raw.toString('utf8'), unparsed: `not JSON: ${(err as Error).message}` };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    return { body: raw, model: null, stream: false, maxTokens: null, injectedUsage: false, promptText: raw.toString('utf8'), unparsed: 'not a JSON object' };
  }
  if (nestsDeeperThan(raw, MAX_JSON_DEPTH)) {
    throw new RequestFailure(ERRORS.requestBodyTooDeep, `request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const o = json as Record<string, unknown>;
  const model = typeof o.model === 'string' ? o.model : null;
  const stream = o.stream === true;
  const maxTokens = tokenCount(o.max_completion_tokens) ?? tokenCount(o.max_tokens);
  const promptText = contentOf(o.messages);
  const opts = o.stream_options;
  const asked = opts !== null && typeof opts === 'object' && (opts as Record<string, unknown>).include_usage === true;
  if (!stream || asked || !askUsage) return { body: raw, model, stream, maxTokens, injectedUsage: false, promptText, unparsed: null };
  return { body: withIncludeUsage(raw, opts), model, stream, maxTokens, injectedUsage: true, promptText, unparsed: null };
}

function tokenCount(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}

/**
 * The body with `stream_options.include_usage: true`, spliced into the original bytes so the
 * rest of the body reaches the backend exactly as the client wrote it (big integers, key
 * order, duplicate keys, spacing). Only an existing stream_options value is re-encoded.
 */
function withIncludeUsage(raw: Buffer, opts: unknown): Buffer {
  const { members, close } = scanTopLevelObject(raw);
  const existing = members.get('stream_options');
  if (existing) {
    const value = opts !== null && typeof opts === 'object' && !Array.isArray(opts) ? { ...opts, include_usage: true } : { include_usage: true };
    return Buffer.concat([raw.subarray(0, existing.start), Buffer.from(JSON.stringify(value)), raw.subarray(existing.end)]);
  }
  const member = `${members.size ? ',' : ''}"stream_options":{"include_usage":true}`;
  return Buffer.concat([raw.subarray(0, close), Buffer.from(member), raw.subarray(close)]);
}
