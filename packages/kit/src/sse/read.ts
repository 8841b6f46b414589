// The events of a readable stream (an HTTP response body), as an async iterable.
import { SseParser, type SseItem, type SseParserOptions } from './parser.js';

export async function* readSse(source: AsyncIterable<Buffer | string>, options: SseParserOptions = {}): AsyncGenerator<SseItem> {
  const parser = new SseParser(options);
  for await (const chunk of source) yield* parser.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  yield* parser.end();
}
