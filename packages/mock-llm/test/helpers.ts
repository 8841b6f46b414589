// Raw node:http helpers: the tests look at status lines, headers and bytes as a proxy would.
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { SseParser } from '@tollgate/kit';
import { afterEach } from 'vitest';
import { startMockLlm, type MockLlm, type MockLlmOptions } from '../src/index.js';

const started: MockLlm[] = [];

/** Starts a mock on 127.0.0.1 with an ephemeral port; closed after the test. */
export async function start(options: MockLlmOptions = {}): Promise<MockLlm> {
  const server = await startMockLlm({ host: '127.0.0.1', port: 0, ...options });
  started.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.close()));
});

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** Sends a request and resolves with the response headers, before the body is read. */
export function send(url: string, init: RequestInit = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    // agent: false gives each request its own connection, so a reset in one test cannot touch another.
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, resolve);
    req.on('error', reject);
    req.end(init.body);
  });
}

export async function readText(res: IncomingMessage): Promise<string> {
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) text += String(chunk);
  return text;
}

export async function fetchRaw(url: string, init: RequestInit = {}): Promise<RawResponse> {
  const res = await send(url, init);
  return { status: res.statusCode ?? 0, headers: res.headers, text: await readText(res) };
}

export function chatBody(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    model: 'mock-gpt',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hello there, tollgate gateway!' },
    ],
    ...overrides,
  });
}

export function postChat(server: MockLlm, body: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return fetchRaw(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

export function json(text: string): unknown {
  return JSON.parse(text);
}

/**
 * Reads server-sent events one at a time as they arrive, so a test can look at the first event
 * while the response is still open.
 */
export class SseReader {
  private readonly parser = new SseParser();
  private readonly events: string[] = [];
  private waiting: (() => void) | undefined;
  ended = false;
  error: Error | undefined;

  constructor(readonly response: IncomingMessage) {
    response.on('data', (chunk: Buffer) => {
      for (const item of this.parser.push(chunk)) this.events.push(item.raw.toString('utf8').replace(/\n\n$/, ''));
      this.wake();
    });
    response.on('end', () => {
      this.ended = true;
      this.wake();
    });
    response.on('error', (error) => {
      this.error = error;
      this.wake();
    });
    response.on('close', () => this.wake());
  }

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
  }

  /** The next event's raw text (`data: ...`), or undefined once the response is over. */
  async next(): Promise<string | undefined> {
    for (;;) {
      const event = this.events.shift();
      if (event !== undefined) return event;
      if (this.ended || this.error !== undefined || this.response.destroyed) return undefined;
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    }
  }

  async all(): Promise<string[]> {
    const events: string[] = [];
    for (let event = await this.next(); event !== undefined; event = await this.next()) events.push(event);
    return events;
  }
}

/** Parses `data: {...}` into the chunk object. */
export function chunkOf(event: string): ChunkShape {
  if (!event.startsWith('data: ')) throw new Error(`not an SSE data event: ${event}`);
  return JSON.parse(event.slice('data: '.length)) as ChunkShape;
}

export interface ChunkShape {
  id: string;
  object: string;
  model: string;
  choices: { index: number; delta: { role?: string; content?: string }; finish_reason: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}
