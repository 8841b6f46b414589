// Real gRPC peers for the gateway's tests: a grpc-js server (over h2c, or TLS with its own
// credentials) with a few methods whose messages are JSON, and a grpc-js client calling through
// the gateway's plain listener (HTTP/2 with prior knowledge).
import * as grpc from '@grpc/grpc-js';

export interface Msg {
  readonly text: string;
  readonly server?: string;
  readonly headers?: Record<string, string>;
}
export const encode = (m: Msg): Buffer => Buffer.from(JSON.stringify(m));
export const decode = (b: Buffer): Msg => JSON.parse(b.toString()) as Msg;
/** A message as gRPC frames it on the wire: not compressed, its length, its bytes. */
export function frame(m: Msg): Buffer {
  const payload = encode(m);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

export const UNARY = '/test.Echo/Unary';
export const STREAM = '/test.Echo/Stream';
export const FAIL = '/test.Echo/Fail';
export const HOLD = '/test.Echo/Hold';

const method = (path: string, responseStream: boolean) => ({
  path,
  requestStream: false,
  responseStream,
  requestSerialize: encode,
  requestDeserialize: decode,
  responseSerialize: encode,
  responseDeserialize: decode,
  originalName: path.slice(path.lastIndexOf('/') + 1),
});

export interface GrpcBackend {
  readonly host: string;
  readonly calls: string[];
  /** The deadline of each Hold call as the server read it from grpc-timeout (Infinity: none). */
  readonly holdDeadlines: number[];
  close(): Promise<void>;
}

/**
 * A grpc-js server named `name`: Unary echoes with its name, the metadata it got and a trailer,
 * Stream sends `count` messages, Fail answers NOT_FOUND, Hold never answers. `credentials`:
 * insecure (h2c) unless given.
 */
export async function startGrpcBackend(name: string, credentials = grpc.ServerCredentials.createInsecure()): Promise<GrpcBackend> {
  const server = new grpc.Server();
  const calls: string[] = [];
  const held: grpc.ServerUnaryCall<Msg, Msg>[] = [];
  const holdDeadlines: number[] = [];
  const headersOf = (md: grpc.Metadata): Record<string, string> => Object.fromEntries(Object.entries(md.getMap()).map(([k, v]) => [k, String(v)]));
  server.addService(
    { unary: method(UNARY, false), stream: method(STREAM, true), fail: method(FAIL, false), hold: method(HOLD, false) },
    {
      unary: (call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) => {
        calls.push(UNARY);
        const trailer = new grpc.Metadata();
        trailer.set('x-trailer', `from-${name}`);
        cb(null, { text: call.request.text, server: name, headers: headersOf(call.metadata) }, trailer);
      },
      stream: (call: grpc.ServerWritableStream<Msg, Msg>) => {
        calls.push(STREAM);
        const count = Number(call.request.text);
        for (let i = 0; i < count; i++) call.write({ text: `part ${i}`, server: name });
        call.end();
      },
      fail: (_call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) => {
        calls.push(FAIL);
        const trailer = new grpc.Metadata();
        trailer.set('x-why', 'missing');
        cb({ code: grpc.status.NOT_FOUND, details: 'no such thing: 100%', metadata: trailer });
      },
      hold: (call: grpc.ServerUnaryCall<Msg, Msg>) => {
        calls.push(HOLD);
        held.push(call);
        const deadline = call.getDeadline();
        holdDeadlines.push(deadline instanceof Date ? deadline.getTime() : deadline);
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return {
    host: `127.0.0.1:${port}`,
    calls,
    holdDeadlines,
    // Held calls would keep a graceful shutdown waiting.
    close: () => new Promise<void>((resolve) => {
      server.forceShutdown();
      resolve();
    }),
  };
}

export interface Outcome {
  readonly code: number;
  readonly details: string;
  readonly messages: Msg[];
  /** The answer's headers (initial metadata); empty when none came. */
  readonly headers: Record<string, string>;
  readonly trailers: Record<string, string>;
}

export interface CallOptions {
  readonly streaming?: boolean;
  readonly metadata?: Record<string, string>;
  /** The call's deadline (grpc-timeout), ms from now. */
  readonly deadlineMs?: number;
}

const mapOf = (md: grpc.Metadata): Record<string, string> => Object.fromEntries(Object.entries(md.getMap()).map(([k, v]) => [k, String(v)]));

/** One call through the gateway listening on `port` (plain: HTTP/2 with prior knowledge). */
export function grpcCall(port: number, path: string, request: Msg, opts: CallOptions = {}): Promise<Outcome> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
  const options = opts.deadlineMs !== undefined ? { deadline: Date.now() + opts.deadlineMs } : {};
  const messages: Msg[] = [];
  let headers: Record<string, string> = {};
  return new Promise<Outcome>((resolve) => {
    const done = (s: grpc.StatusObject) => {
      client.close();
      resolve({ code: s.code, details: s.details, messages, headers, trailers: mapOf(s.metadata) });
    };
    if (opts.streaming) {
      const stream = client.makeServerStreamRequest(path, encode, decode, request, md, options);
      stream.on('metadata', (m: grpc.Metadata) => (headers = mapOf(m)));
      stream.on('data', (m: Msg) => messages.push(m));
      stream.on('error', () => {});
      stream.on('status', done);
    } else {
      const c = client.makeUnaryRequest(path, encode, decode, request, md, options, (_err, m) => {
        if (m) messages.push(m);
      });
      c.on('metadata', (m: grpc.Metadata) => (headers = mapOf(m)));
      c.on('status', done);
    }
  });
}
