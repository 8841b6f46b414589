import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { MOCK_ERRORS } from './errors.js';
import { parseHost, parsePort } from '@tollgate/api/host-port';
import { MAX_COMPLETION_TOKENS, MAX_WAIT_MS } from './knobs.js';
import { DEFAULT_COMPLETION_TOKENS, DEFAULT_HOST, ListenError, startMockLlm, type MockLlmOptions } from './server.js';

/** Exit codes: 0 ok (also after SIGTERM/SIGINT), 1 could not start (e.g. port in use), 2 bad command line. */
const EXIT_START_FAILED = 1;
const EXIT_USAGE = 2;
/** On SIGTERM, how long responses in flight may take before their connections are cut (--drain-seconds). */
const DEFAULT_DRAIN_SECONDS = 10;
const MAX_DRAIN_SECONDS = 3600;

const HELP = `mock-llm: an OpenAI- and Anthropic-compatible backend for tests, demos and benchmarks

Usage:
  mock-llm --port <port> [--host ${DEFAULT_HOST}] [--latency-ms-per-token <ms>]
           [--completion-tokens <n>] [--model <name> ...]
           [--tls-cert-file <pem> --tls-key-file <pem>]
           [--api-key-file <file> [--api-key-header authorization|api-key|x-api-key]]
           [--drain-seconds <s>]
  mock-llm --help | --version

Options:
  --port <port>                  TCP port to listen on; 0 picks a free one (required)
  --host <address>               address to bind (default ${DEFAULT_HOST})
  --latency-ms-per-token <ms>    pause before each completion token/stream chunk (default 0);
                                 a non-streaming reply waits ms x tokens
  --completion-tokens <n>        default completion length in words/tokens (default ${DEFAULT_COMPLETION_TOKENS})
  --model <name>                 model to list and accept; repeat for several. Without it,
                                 'mock-gpt' is listed and any model name is accepted
  --tls-cert-file <pem>          serve HTTPS with this certificate (chain); needs --tls-key-file
  --tls-key-file <pem>           the certificate's private key
  --api-key-file <file>          require the key this file holds (surrounding whitespace ignored),
                                 as a provider does; a request without it gets 401 invalid_api_key
  --api-key-header <name>        where the key is expected: authorization (Bearer, OpenAI's; the
                                 default), api-key (Azure OpenAI's) or x-api-key (Anthropic's)
  --drain-seconds <s>            on SIGTERM/SIGINT, how long responses in flight may take
                                 before their connections are cut (default ${DEFAULT_DRAIN_SECONDS}; 0: at once)
  -h, --help                     show this help
  -v, --version                  print the version

On start it prints one line to stdout: mock-llm listening on http(s)://<host>:<port>
SIGTERM or SIGINT stops accepting connections, lets responses in flight finish (at most
--drain-seconds; each busy connection closes after its response) and exits 0. Exit 1: could not listen; exit 2: bad arguments.

Endpoints:
  POST /v1/chat/completions   {model, messages, stream?, stream_options?: {include_usage?}, max_tokens?}
                              reply: the words of the last user message, repeated, one word per token
                              usage: prompt_tokens = ceil(message chars / 4),
                                     completion_tokens = min(--completion-tokens, max_tokens)
  POST /v1/messages           Anthropic's Messages API: {model, max_tokens, messages, system?, stream?,
                              stop_sequences?, tools?, tool_choice?}; the same reply, as a message or
                              its SSE events; usage input_tokens/output_tokens; errors in Anthropic's
                              shape; tool_choice any/tool answers a tool_use block
  GET  /v1/models             models list;  GET /v1/models/<id>
  GET  /healthz               200 ok

Per-request headers:
  x-mock-prompt-tokens: <n>          usage.prompt_tokens
  x-mock-completion-tokens: <n>      number of words/chunks and usage.completion_tokens (0-${MAX_COMPLETION_TOKENS})
  x-mock-usage: none                 omit usage (also the include_usage stream chunk)
  x-mock-latency-ms-per-token: <ms>  overrides --latency-ms-per-token
  x-mock-delay-ms: <ms>              wait before sending response headers (0-${MAX_WAIT_MS})
  x-mock-status: <400-599>           answer that status with an OpenAI-style error body
  x-mock-retry-after: <value>        with x-mock-status: send this Retry-After (seconds or an HTTP date)
  x-mock-error: reset                destroy the connection without answering
  x-mock-error: reset-mid-stream     destroy it after the first content chunk of a stream
                                     (non-streaming: after half of the body)
  x-mock-error: garbage              a body, or after the first content chunk an event, that is not JSON
  x-mock-error: truncate             end the response cleanly but early: half a JSON body, or a
                                     stream without its end (no usage, [DONE] or message_stop)
  A bad header value gets 400 naming the header.

Examples:
  mock-llm --port 9000
  mock-llm --port 0 --latency-ms-per-token 20 --model gpt-4o-mini --model gpt-4o
  curl -s localhost:9000/v1/chat/completions -H 'x-mock-completion-tokens: 5' \\
    -d '{"model":"mock-gpt","messages":[{"role":"user","content":"hello tollgate"}]}'
  curl -sN localhost:9000/v1/chat/completions -H 'x-mock-status: 429' \\
    -d '{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}],"stream":true}'
`;

class UsageError extends Error {
  readonly code = MOCK_ERRORS.usage.code;
}

function version(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

function integerFlag(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max)) throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got '${raw}'`);
  return value;
}

/** parseArgs' own messages span several lines and mention positionals; say what went wrong in one line. */
function parseError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = 'code' in error ? error.code : undefined;
  // The first quoted part names the option ('--port <value>', '-h, --help') or the stray argument.
  const quotedPart = /'([^']*)'/.exec(error.message)?.[1] ?? '';
  const quoted = /--[\w-]+/.exec(quotedPart)?.[0] ?? quotedPart.split(' ')[0] ?? quotedPart;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${quoted}`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument ${quoted}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (error.message.includes('does not take an argument')) return `option ${quoted} takes no value`;
    if (error.message.includes('ambiguous')) return `option ${quoted} needs a value (write ${quoted}=<value> for one starting with '-')`;
    return `option ${quoted} needs a value`;
  }
  return error.message.split('\n')[0] ?? error.message;
}

type Command = { kind: 'help' } | { kind: 'version' } | { kind: 'serve'; options: MockLlmOptions; drainMs: number };

function parseFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'latency-ms-per-token': { type: 'string' },
        'completion-tokens': { type: 'string' },
        model: { type: 'string', multiple: true },
        'tls-cert-file': { type: 'string' },
        'tls-key-file': { type: 'string' },
        'api-key-file': { type: 'string' },
        'api-key-header': { type: 'string' },
        'drain-seconds': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    }).values;
  } catch (error) {
    throw new UsageError(parseError(error));
  }
}

/** The certificate and key, read now so that a bad path is a usage error naming the flag. */
function tlsFiles(certFile: string | undefined, keyFile: string | undefined): { cert: Buffer; key: Buffer } | null {
  if (certFile === undefined && keyFile === undefined) return null;
  if (certFile === undefined || keyFile === undefined) throw new UsageError('--tls-cert-file and --tls-key-file go together: give both or neither');
  const read = (flag: string, path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new UsageError(`--${flag} '${path}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  };
  return { cert: read('tls-cert-file', certFile), key: read('tls-key-file', keyFile) };
}

const KEY_HEADERS = ['authorization', 'api-key', 'x-api-key'] as const;

/** The key a provider would require, read now so that a bad path is a usage error naming the flag. */
function apiKey(file: string | undefined, header: string | undefined): MockLlmOptions['apiKey'] {
  if (file === undefined) {
    if (header !== undefined) throw new UsageError('--api-key-header needs --api-key-file');
    return undefined;
  }
  const where = header ?? 'authorization';
  if (!(KEY_HEADERS as readonly string[]).includes(where)) throw new UsageError(`--api-key-header must be one of ${KEY_HEADERS.join(', ')}, got '${where}'`);
  let key: string;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new UsageError(`--api-key-file '${file}' cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (key === '' || key.length > 4096 || !/^[\x21-\x7e]+$/.test(key)) throw new UsageError(`--api-key-file '${file}' must hold one key of visible ASCII characters (at most 4096)`);
  return { header: where as (typeof KEY_HEADERS)[number], key };
}

export function parseCommandLine(argv: string[]): Command {
  const values = parseFlags(argv);
  if (values.help === true) return { kind: 'help' };
  if (values.version === true) return { kind: 'version' };

  if (values.port === undefined) throw new UsageError('--port is required (use --port 0 to pick a free port)');
  const port = parsePort(values.port, { ephemeralPort: true });
  if (!port.ok) throw new UsageError(`--port must be an integer from 0 to 65535, got '${values.port}'`);
  const host = values.host === undefined ? null : parseHost(values.host);
  if (host && !host.ok) throw new UsageError(`--host got '${values.host}': ${host.problem}`);
  const models = values.model ?? [];
  if (models.some((model) => model.trim() === '')) throw new UsageError('--model must not be empty');
  const tls = tlsFiles(values['tls-cert-file'], values['tls-key-file']);
  const key = apiKey(values['api-key-file'], values['api-key-header']);
  return {
    kind: 'serve',
    drainMs: (integerFlag('drain-seconds', values['drain-seconds'], 0, MAX_DRAIN_SECONDS) ?? DEFAULT_DRAIN_SECONDS) * 1000,
    options: {
      ...(tls ? { tls } : {}),
      ...(key ? { apiKey: key } : {}),
      port: port.value,
      host: values.host ?? DEFAULT_HOST,
      latencyMsPerToken: integerFlag('latency-ms-per-token', values['latency-ms-per-token'], 0, MAX_WAIT_MS),
      completionTokens: integerFlag('completion-tokens', values['completion-tokens'], 0, MAX_COMPLETION_TOKENS),
      ...(models.length > 0 ? { models } : {}),
    },
  };
}

export async function main(argv: string[]): Promise<void> {
  let command: Command;
  try {
    command = parseCommandLine(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`mock-llm: ${error.message} (see mock-llm --help)\n`);
    process.exitCode = EXIT_USAGE;
    return;
  }
  if (command.kind === 'help') {
    process.stdout.write(HELP);
    return;
  }
  if (command.kind === 'version') {
    process.stdout.write(`${version()}\n`);
    return;
  }

  let server;
  try {
    server = await startMockLlm(command.options);
  } catch (error) {
    if (!(error instanceof ListenError)) throw error;
    process.stderr.write(`mock-llm: ${error.message}\n`);
    process.exitCode = EXIT_START_FAILED;
    return;
  }
  const stop = (): void => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    server.drain(command.drainMs).then(
      () => {
        process.exitCode = 0;
      },
      (error: unknown) => {
        process.stderr.write(`mock-llm: error while closing: ${String(error)}\n`);
        process.exitCode = EXIT_START_FAILED;
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // Scripts wait for exactly this line; keep its format stable.
  process.stdout.write(`mock-llm listening on ${server.url}\n`);
}
