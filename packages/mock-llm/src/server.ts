import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { http } from '@tollgate/kit/node-http';
import { parseMessagesRequest } from './anthropic-request.js';
import { anthropicErrorBody, anthropicErrorType, messageBody, planMessage, streamMessage } from './anthropic.js';
import { readBody } from './body.js';
import { completionBody, planCompletion } from './completion.js';
import { injectedError, invalidRequest, MOCK_ERRORS, sendError, type MockErrorCode } from './errors.js';
import { MAX_COMPLETION_TOKENS, MAX_WAIT_MS, readKnobs, type Fault, type Knobs } from './knobs.js';
import { DEFAULT_MODELS, modelList, modelObject } from './models.js';
import { parseChatRequest } from './request.js';
import { streamCompletion } from './sse.js';
import { wait } from './wait.js';

export interface MockLlmOptions {
  /** TCP port; 0 (the default) picks a free one. */
  port?: number;
  /** Address to bind; default 127.0.0.1. */
  host?: string;
  /** Pause before each completion token (stream chunk); header `x-mock-latency-ms-per-token` overrides. Default 0. */
  latencyMsPerToken?: number;
  /**
   * Models listed by `GET /v1/models`. When given, requests for any other model get OpenAI's 404
   * `model_not_found`; when left out, `mock-gpt` is listed and every model name is accepted.
   */
  models?: readonly string[];
  /** Completion length when neither `x-mock-completion-tokens` nor a smaller `max_tokens` says otherwise. Default 16. */
  completionTokens?: number;
  /** Larger request bodies get 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Called for every request before it is handled, e.g. to assert that a gateway did (not) forward one. */
  onRequest?: (request: ReceivedRequest) => void;
  /**
   * The key the mock requires, as a provider does: in `Authorization: Bearer <key>` (OpenAI), `api-key`
   * (Azure OpenAI) or `x-api-key` (Anthropic). A request without it gets OpenAI's 401 `invalid_api_key`.
   * A function is asked at each request (a key rotated while the mock runs).
   */
  apiKey?: { readonly header: 'authorization' | 'api-key' | 'x-api-key'; readonly key: string | (() => string) };
  /** Path the API is served under instead of `/v1` (Azure's `/openai/deployments/<name>`). Default `/v1`. */
  basePath?: string;
  /** The `api-version` query parameter every API request must carry (Azure OpenAI); a request without it gets 404. */
  apiVersion?: string;
  /** Called with the body of every chat or messages request, once read (what a gateway sent, e.g. a translated body). */
  onRequestBody?: (request: ReceivedRequest, body: Buffer) => void;
  /** Serve HTTPS with this certificate and key (PEM); default plain HTTP. */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

export interface ReceivedRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: IncomingHttpHeaders;
}

export interface MockLlm {
  /** Base URL, e.g. `http://127.0.0.1:41234` (https with `tls`); OpenAI clients take `${url}/v1` as baseURL. */
  url: string;
  host: string;
  port: number;
  /** Requests received so far, on any path. */
  readonly requestCount: number;
  /** Stops listening and destroys open connections (in-flight streams end abruptly); idempotent. */
  close(): Promise<void>;
  /**
   * Stops as a server under an orchestrator should: no new connections, idle kept-alive ones
   * closed, each busy one closed once its response is sent (`Connection: close`), and what is
   * still open after `graceMs` destroyed. Resolves when the server is closed.
   */
  drain(graceMs: number): Promise<void>;
}

/** A listen failure (TG_MOCK_LISTEN) with the address in its message, e.g. a port already in use. */
export class ListenError extends Error {
  readonly catalogCode = MOCK_ERRORS.listen.code;
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'ListenError';
  }
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_COMPLETION_TOKENS = 16;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

interface Config {
  latencyMsPerToken: number;
  models: readonly string[];
  /** Only configured model lists are enforced; the default one accepts any model name. */
  enforceModels: boolean;
  completionTokens: number;
  maxBodyBytes: number;
  onRequest: ((request: ReceivedRequest) => void) | undefined;
  apiKey: MockLlmOptions['apiKey'];
  basePath: string;
  apiVersion: string | undefined;
  onRequestBody: ((request: ReceivedRequest, body: Buffer) => void) | undefined;
}

type Route = { kind: 'chat' } | { kind: 'messages' } | { kind: 'models' } | { kind: 'model'; id: string } | { kind: 'health' };

function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined; // malformed %-escape: treated as an unknown path
  }
}

function route(method: string | undefined, path: string, base: string): Route | undefined {
  if (method === 'POST' && path === `${base}/chat/completions`) return { kind: 'chat' };
  if (method === 'POST' && path === `${base}/messages`) return { kind: 'messages' };
  if (method === 'GET' || method === 'HEAD') {
    if (path === '/healthz') return { kind: 'health' };
    if (path === `${base}/models`) return { kind: 'models' };
    if (path.startsWith(`${base}/models/`) && path.length > `${base}/models/`.length) {
      const id = decodePathSegment(path.slice(`${base}/models/`.length));
      if (id !== undefined) return { kind: 'model', id };
    }
  }
  return undefined;
}

function sendJson(res: ServerResponse, body: string, requestId?: string, status = 200): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...(requestId === undefined ? {} : { 'x-request-id': requestId }),
  });
  res.end(body);
}

function unknownModel(res: ServerResponse, model: string, config: Config): void {
  const e = MOCK_ERRORS.modelNotFound;
  sendError(res, e.status, invalidRequest(e.create({ model, models: config.models.join(', ') }).message, 'model', 'model_not_found'), e.code);
}

/**
 * A JSON body as `x-mock-error` asks: reset-mid-stream answers half of it and drops the
 * connection; truncate sends half of it as a complete response (its content-length says so);
 * garbage sends something that is not JSON at all.
 */
function sendFaultyJson(res: ServerResponse, body: string, fault: Fault, requestId: string): void {
  if (fault === 'reset-mid-stream') {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.write(body.slice(0, Math.floor(body.length / 2)), () => res.destroy());
  } else if (fault === 'truncate') sendJson(res, body.slice(0, Math.floor(body.length / 2)), requestId);
  else if (fault === 'garbage') sendJson(res, '<html>upstream says hello</html>', requestId);
  else sendJson(res, body, requestId);
}

function faultOf(knobs: Knobs): Fault {
  return knobs.error === 'reset' ? undefined : knobs.error;
}

/** Aborts when the response closes unfinished: the client went away or the server shut down. */
function closeSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    // abort() builds a DOMException with a stack; skip it for the common, completed response.
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

async function handleChat(req: IncomingMessage, res: ServerResponse, knobs: Knobs, config: Config, id: string): Promise<void> {
  const body = await readBody(req, config.maxBodyBytes);
  if (!body.ok) {
    const e = MOCK_ERRORS.bodyTooLarge;
    sendError(res, e.status, invalidRequest(e.create({ limit: config.maxBodyBytes }).message), e.code);
    return;
  }
  const signal = closeSignal(res);
  if (!(await injectBeforeAnswer(req, res, knobs, signal))) return;

  config.onRequestBody?.(received(req), body.body);
  const parsed = parseChatRequest(body.body);
  if (!parsed.ok) {
    sendError(res, MOCK_ERRORS.invalidRequest.status, parsed.error, MOCK_ERRORS.invalidRequest.code);
    return;
  }
  const request = parsed.request;
  if (config.enforceModels && !config.models.includes(request.model)) {
    unknownModel(res, request.model, config);
    return;
  }

  const plan = planCompletion(request, knobs, config.completionTokens, id);
  const latencyMsPerToken = knobs.latencyMsPerToken ?? config.latencyMsPerToken;
  if (request.stream) {
    await streamCompletion(res, plan, {
      includeUsage: request.includeUsage,
      latencyMsPerToken,
      fault: faultOf(knobs),
      signal,
    });
    return;
  }
  // A non-streaming answer takes as long as generating all its tokens would.
  const generation = latencyMsPerToken * plan.words.length;
  if (generation > 0 && !(await wait(generation, signal))) return;
  sendFaultyJson(res, completionBody(plan), faultOf(knobs), id);
}

function received(req: IncomingMessage): ReceivedRequest {
  return { method: req.method ?? '', url: req.url ?? '', headers: req.headers };
}

function sendAnthropicError(res: ServerResponse, status: number, message: string, code: MockErrorCode): void {
  const body = anthropicErrorBody(anthropicErrorType(status), message);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-tollgate-error': code });
  res.end(body);
}

/** POST /v1/messages: Anthropic's Messages API, its errors in Anthropic's shape. */
async function handleMessages(req: IncomingMessage, res: ServerResponse, knobs: Knobs, config: Config, id: string): Promise<void> {
  const body = await readBody(req, config.maxBodyBytes);
  if (!body.ok) {
    const e = MOCK_ERRORS.bodyTooLarge;
    sendAnthropicError(res, e.status, e.create({ limit: config.maxBodyBytes }).message, e.code);
    return;
  }
  config.onRequestBody?.(received(req), body.body);
  const signal = closeSignal(res);
  if (knobs.delayMs > 0 && !(await wait(knobs.delayMs, signal))) return;
  if (knobs.error === 'reset') {
    req.socket.destroy();
    return;
  }
  if (knobs.status !== undefined) {
    sendAnthropicError(res, knobs.status, MOCK_ERRORS.injectedStatus.create({ status: knobs.status }).message, MOCK_ERRORS.injectedStatus.code);
    return;
  }
  const parsed = parseMessagesRequest(body.body);
  if (!parsed.ok) {
    sendAnthropicError(res, 400, parsed.error.message, MOCK_ERRORS.invalidRequest.code);
    return;
  }
  const request = parsed.request;
  if (config.enforceModels && !config.models.includes(request.model)) {
    const e = MOCK_ERRORS.modelNotFound;
    sendAnthropicError(res, e.status, e.create({ model: request.model, models: config.models.join(', ') }).message, e.code);
    return;
  }
  const plan = planMessage(request, planCompletion(request, knobs, config.completionTokens, id), id);
  const latencyMsPerToken = knobs.latencyMsPerToken ?? config.latencyMsPerToken;
  if (request.stream) {
    await streamMessage(res, plan, { latencyMsPerToken, fault: faultOf(knobs), signal });
    return;
  }
  const generation = latencyMsPerToken * plan.words.length;
  if (generation > 0 && !(await wait(generation, signal))) return;
  sendFaultyJson(res, messageBody(plan), faultOf(knobs), plan.id);
}

/**
 * Applies the knobs that come before any answer: delay, reset, injected status. Returns false when
 * the request has been dealt with (or the client is gone) and must not be answered further.
 */
async function injectBeforeAnswer(req: IncomingMessage, res: ServerResponse, knobs: Knobs, signal: AbortSignal): Promise<boolean> {
  if (knobs.delayMs > 0 && !(await wait(knobs.delayMs, signal))) return false;
  if (knobs.error === 'reset') {
    req.socket.destroy();
    return false;
  }
  if (knobs.status !== undefined) {
    sendError(res, knobs.status, injectedError(knobs.status), MOCK_ERRORS.injectedStatus.code, knobs.retryAfter === undefined ? {} : { 'retry-after': knobs.retryAfter });
    return false;
  }
  return true;
}

function createHandler(config: Config): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  let sequence = 0;
  return async (req, res) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    let target = route(req.method, path, config.basePath);
    if (target !== undefined && target.kind !== 'health' && config.apiVersion !== undefined) {
      const version = new URLSearchParams(query === -1 ? '' : url.slice(query + 1)).getAll('api-version');
      if (version.length !== 1 || version[0] !== config.apiVersion) target = undefined;
    }
    if (target === undefined) {
      // OpenAI's own answer to an unknown path or method.
      const e = MOCK_ERRORS.notFound;
      sendError(res, e.status, invalidRequest(e.create({ method: req.method ?? '', path }).message), e.code);
      return;
    }
    if (target.kind === 'health') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 3 });
      res.end('ok\n');
      return;
    }

    if (config.apiKey && !hasKey(req.headers, config.apiKey)) {
      const e = MOCK_ERRORS.unauthorized;
      sendError(res, e.status, { message: e.create({ header: config.apiKey.header }).message, type: 'invalid_request_error', param: null, code: 'invalid_api_key' }, e.code);
      return;
    }
    const knobsResult = readKnobs(req.headers);
    if (!knobsResult.ok) {
      sendError(res, MOCK_ERRORS.invalidHeader.status, invalidRequest(knobsResult.message, knobsResult.header), MOCK_ERRORS.invalidHeader.code);
      return;
    }
    const knobs = knobsResult.knobs;
    sequence += 1;
    if (target.kind === 'chat') {
      await handleChat(req, res, knobs, config, `chatcmpl-mock-${sequence}`);
      return;
    }
    if (target.kind === 'messages') {
      await handleMessages(req, res, knobs, config, `mock_${sequence}`);
      return;
    }
    if (!(await injectBeforeAnswer(req, res, knobs, closeSignal(res)))) return;
    const requestId = `req_mock_${sequence}`;
    if (target.kind === 'models') {
      sendJson(res, modelList(config.models), requestId);
    } else if (config.models.includes(target.id) || !config.enforceModels) {
      sendJson(res, JSON.stringify(modelObject(target.id)), requestId);
    } else {
      unknownModel(res, target.id, config);
    }
  };
}

function hasKey(headers: IncomingHttpHeaders, want: NonNullable<MockLlmOptions['apiKey']>): boolean {
  const key = typeof want.key === 'function' ? want.key() : want.key;
  const got = headers[want.header];
  return got === (want.header === 'authorization' ? `Bearer ${key}` : key);
}

function checkInteger(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(MOCK_ERRORS.option.create({ name, min, max, value }).message);
  }
}

function boundPort(address: AddressInfo | string | null): number {
  // A TCP listener always reports an AddressInfo; the other shapes are for pipes and unbound servers.
  if (address === null || typeof address === 'string') throw new Error('mock-llm: server is not listening on TCP');
  return address.port;
}

function formatUrl(host: string, port: number, scheme = 'http'): string {
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** An HTTPS server; a certificate or key that does not load is a ListenError naming them. */
function httpsServer(tls: NonNullable<MockLlmOptions['tls']>, listener: (req: IncomingMessage, res: ServerResponse) => void, where: string): Server {
  try {
    return createHttpsServer({ noDelay: true, cert: tls.cert, key: tls.key }, listener);
  } catch (error) {
    const reason = `TLS certificate or key: ${error instanceof Error ? error.message : String(error)}`;
    throw new ListenError(MOCK_ERRORS.listen.create({ address: where.slice('http://'.length), reason }).message, undefined);
  }
}

/** Starts the mock backend; resolves once it is listening. */
export async function startMockLlm(options: MockLlmOptions = {}): Promise<MockLlm> {
  const host = options.host ?? DEFAULT_HOST;
  const config: Config = {
    latencyMsPerToken: options.latencyMsPerToken ?? 0,
    models: options.models !== undefined && options.models.length > 0 ? [...new Set(options.models)] : DEFAULT_MODELS,
    enforceModels: options.models !== undefined && options.models.length > 0,
    completionTokens: options.completionTokens ?? DEFAULT_COMPLETION_TOKENS,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    onRequest: options.onRequest,
    apiKey: options.apiKey,
    basePath: (options.basePath ?? '/v1').replace(/\/+$/, ''),
    apiVersion: options.apiVersion,
    onRequestBody: options.onRequestBody,
  };
  checkInteger('port', options.port ?? 0, 0, 65535);
  checkInteger('latencyMsPerToken', config.latencyMsPerToken, 0, MAX_WAIT_MS);
  checkInteger('completionTokens', config.completionTokens, 0, MAX_COMPLETION_TOKENS);
  checkInteger('maxBodyBytes', config.maxBodyBytes, 1, Number.MAX_SAFE_INTEGER);

  const handle = createHandler(config);
  let requestCount = 0;
  let draining = false;
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    requestCount += 1;
    // Draining: this connection's last response.
    if (draining) res.setHeader('connection', 'close');
    config.onRequest?.({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handle(req, res).catch((error: unknown) => {
      // A bug or a client that vanished mid-body must cost one request, never the process.
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      const e = MOCK_ERRORS.internal;
      sendError(res, e.status, { message: e.create({ reason: message }).message, type: 'server_error', param: null, code: null }, e.code);
    });
  };
  const server = options.tls ? httpsServer(options.tls, listener, formatUrl(host, options.port ?? 0)) : http.createServer({ noDelay: true }, listener);

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      const where = formatUrl(host, options.port ?? 0).slice('http://'.length);
      const reason = error.code === 'EADDRINUSE' ? `port ${options.port ?? 0} is already in use` : error.message;
      const message = MOCK_ERRORS.listen.create({ address: where, reason }).message;
      reject(new ListenError(message, error.code));
    };
    server.once('error', onError);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', onError);
      resolve();
    });
  });

  const port = boundPort(server.address());
  let closing: Promise<void> | undefined;
  return {
    url: formatUrl(host, port, options.tls ? 'https' : 'http'),
    host,
    port,
    get requestCount() {
      return requestCount;
    },
    drain(graceMs) {
      draining = true;
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      timer.unref();
      closing ??= new Promise<void>((resolve, reject) => {
        // close() also closes the idle kept-alive connections.
        server.close((error) => (clearTimeout(timer), error ? reject(error) : resolve()));
      });
      return closing;
    },
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // Keep-alive and streaming connections would otherwise hold close() open.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
