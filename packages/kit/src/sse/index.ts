// The SSE reader on its own (`@tollgate/kit/sse`): for clients such as gwctl that read event
// streams and need none of the server pieces (fastify, pino, pprof) the package root brings.
export { SseParser, DEFAULT_MAX_LINE_BYTES, type SseEvent, type SsePassthrough, type SseItem, type SseParserOptions } from './parser.js';
export { readSse } from './read.js';
