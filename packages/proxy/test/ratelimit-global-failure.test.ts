// Global rate limits when the service cannot answer: the real envoyproxy/ratelimit stopped
// mid-suite, an address nobody listens on, and a service that never answers (the deadline).
// Also what only a hand-written RLS server can send (raw_body, request headers) and the
// request bytes on the wire: that server reads requests and writes replies with Envoy's own
// types (e2e/tools/envoy-proto), never with the gateway's codec.
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_LIMITS, type GlobalRateLimitIR } from '@tollgate/api';
import type { Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileGlobalLimiter, RlsClientPool, type GlobalLimiter, type RequestFacts } from '../src/ratelimit/global/index.js';
import { SHOULD_RATE_LIMIT_PATH } from '../src/ratelimit/global/proto.js';
import { envoyProtoAvailability, officialDecode, officialEncode } from './support/envoy-proto.js';
import { captureLog } from './support/log.js';
import { freePort, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const availability = rlsAvailability();

const WARN = 40;

function facts(headers: Record<string, string> = {}): RequestFacts {
  return { method: 'POST', path: '/v1/chat/completions', host: 'api.example.com', headers, sourceAddress: '127.0.0.1', model: 'gpt-4o', consumer: null };
}

const DESCRIPTORS: GlobalRateLimitIR['descriptors'] = [
  { unit: 'Requests', entries: [{ name: 'user', expression: 'request.headers["x-user-id"]' }] },
  { unit: 'Tokens', entries: [{ name: 'model', expression: 'llm.model' }] },
];

function make(service: string, failureMode: GlobalRateLimitIR['failureMode'], pool: RlsClientPool, log: Logger, timeoutMs = 2000): GlobalLimiter {
  return compileGlobalLimiter({ service, domain: 'tg-failure', descriptors: DESCRIPTORS, failureMode, timeoutMs }, { log, clients: pool }, DEFAULT_LIMITS);
}

describe.skipIf(!availability.run)('global rate limits with the service stopped', () => {
  let rls: RlsService;
  const pool = new RlsClientPool();

  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, {
      configs: {
        'tg-failure': `
domain: tg-failure
descriptors:
  - key: user
    rate_limit: { unit: day, requests_per_unit: 1 }
  - key: model
    rate_limit: { unit: day, requests_per_unit: 1000 }
`,
      },
    });
  });
  afterAll(async () => {
    await pool.close();
    await rls?.stop();
  });

  it('limits while the service runs, then FailOpen lets requests through and FailClosed refuses them', async () => {
    const open = captureLog();
    const closed = captureLog();
    const failOpen = make(rls.address, 'FailOpen', pool, open.log);
    const failClosed = make(rls.address, 'FailClosed', pool, closed.log);
    const user = facts({ 'x-user-id': 'u1' });

    // Running: the channel is up and the limit applies to both.
    expect(await failOpen.check(user)).toMatchObject({ allowed: true, outcome: 'ok' });
    expect(await failClosed.check(user)).toMatchObject({ allowed: false, outcome: 'overLimit', status: 429 });

    await rls.stopService();

    for (let i = 0; i < 3; i++) {
      const c = await failOpen.check(user);
      expect(c).toMatchObject({ allowed: true, outcome: 'failedOpen', status: 200, headers: {} });
      await c.settle(50); // the charge fails too; logged, never thrown
    }
    const refused = await failClosed.check(user);
    expect(refused).toMatchObject({ allowed: false, outcome: 'serviceError', status: 500, body: 'rate limit service unavailable', headers: {} });
    expect(refused.headers['x-proxy-ratelimited']).toBeUndefined();

    // One warn line per service address per interval, however many requests fail; the rest
    // go to debug. Both limiters share the address, so FailClosed's first failure is debug.
    const warns = [...open.lines, ...closed.lines].filter((l) => l.level === WARN);
    expect(warns).toHaveLength(1);
    expect(warns[0]).toMatchObject({ service: rls.address, failureMode: 'FailOpen', code: 'UNAVAILABLE' });
    expect(warns[0]!.msg).toContain('failing open');
    expect(open.lines.filter((l) => l.msg.includes('LLM tokens not charged'))).toHaveLength(3);
  });

  it('reconnects when the service is back, with the counters Redis kept', async () => {
    const { log } = captureLog();
    const g = make(rls.address, 'FailClosed', pool, log);
    const user = facts({ 'x-user-id': 'u1' });
    expect(await g.check(user)).toMatchObject({ outcome: 'serviceError' });

    await rls.restartService();
    // The channel reconnects after its backoff (at most 2s); until then calls fail fast.
    const deadline = Date.now() + 15_000;
    let c = await g.check(user);
    while (c.outcome === 'serviceError' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      c = await g.check(user);
    }
    expect(c).toMatchObject({ allowed: false, outcome: 'overLimit' }); // u1 used its 1 per day before the stop
    expect(await g.check(facts({ 'x-user-id': 'u2' }))).toMatchObject({ allowed: true, outcome: 'ok' });
  });
});

describe('global rate limits with an unreachable or silent service', () => {
  const pool = new RlsClientPool();
  let silent: grpc.Server;
  let silentAddress: string;
  let unreachable: string;

  beforeAll(async () => {
    unreachable = `127.0.0.1:${await freePort()}`;
    silent = new grpc.Server();
    // Accepts ShouldRateLimit and never answers.
    silent.addService(
      {
        ShouldRateLimit: {
          path: SHOULD_RATE_LIMIT_PATH,
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      { ShouldRateLimit: () => undefined },
    );
    const port = await new Promise<number>((resolve, reject) =>
      silent.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    silentAddress = `127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await pool.close();
    silent.forceShutdown();
  });

  it('FailOpen allows and FailClosed refuses when nothing listens at the address', async () => {
    const { log, lines } = captureLog();
    expect(await make(unreachable, 'FailOpen', pool, log).check(facts({ 'x-user-id': 'u' }))).toMatchObject({ allowed: true, outcome: 'failedOpen' });
    expect(await make(unreachable, 'FailClosed', pool, log).check(facts({ 'x-user-id': 'u' }))).toMatchObject({
      allowed: false,
      outcome: 'serviceError',
      status: 500,
    });
    expect(lines.find((l) => l.level === WARN)).toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('treats a missed deadline as a service error', async () => {
    const { log, lines } = captureLog();
    expect(await make(silentAddress, 'FailOpen', pool, log, 50).check(facts({ 'x-user-id': 'u' }))).toMatchObject({ allowed: true, outcome: 'failedOpen' });
    expect(await make(silentAddress, 'FailClosed', pool, log, 50).check(facts({ 'x-user-id': 'u' }))).toMatchObject({ allowed: false, outcome: 'serviceError' });
    expect(lines.find((l) => l.level === WARN)).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
  });

  it('does not call the service when no descriptor has a value', async () => {
    const { log } = captureLog();
    const g = compileGlobalLimiter(
      { service: unreachable, domain: 'd', descriptors: [DESCRIPTORS[0]!], failureMode: 'FailClosed', timeoutMs: 100 },
      { log, clients: pool },
      DEFAULT_LIMITS,
    );
    expect(await g.check(facts())).toMatchObject({ allowed: true, outcome: 'ok' });
  });
});

const RLS_REQUEST = 'envoy.service.ratelimit.v3.RateLimitRequest';
const RLS_RESPONSE = 'envoy.service.ratelimit.v3.RateLimitResponse';
const encodeResponse = (json: unknown) => officialEncode(RLS_RESPONSE, json);
const base64 = (text: string) => Buffer.from(text).toString('base64');

describe.skipIf(!envoyProtoAvailability().run)('global rate limits on the wire', () => {
  const pool = new RlsClientPool();
  const seen: Record<string, unknown>[] = [];
  let reply: Buffer;
  let server: grpc.Server;
  let address: string;

  beforeAll(async () => {
    server = new grpc.Server();
    server.addService(
      {
        ShouldRateLimit: {
          path: SHOULD_RATE_LIMIT_PATH,
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => officialDecode(RLS_REQUEST, b),
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      {
        ShouldRateLimit: (call: grpc.ServerUnaryCall<Record<string, unknown>, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
          seen.push(call.request);
          cb(null, reply);
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await pool.close();
    server.forceShutdown();
  });

  it('sends requests descriptors with the request-wide hits_addend 1 and tokens descriptors with a per-descriptor 0, then the usage', async () => {
    const { log } = captureLog();
    reply = encodeResponse({ overall_code: 'OK', statuses: [{ code: 'OK' }, { code: 'OK' }] });
    const g = make(address, 'FailClosed', pool, log);
    seen.length = 0;
    const c = await g.check(facts({ 'x-user-id': 'u7' }));
    expect(c).toMatchObject({ allowed: true, outcome: 'ok' });
    await c.settle(1234.7);
    expect(seen).toHaveLength(2);
    // As Envoy's types read them (protojson: a set UInt64Value wrapper, even 0, is a string; an unset one is absent).
    expect(seen[0]).toEqual({
      domain: 'tg-failure',
      hits_addend: 1,
      descriptors: [
        { entries: [{ key: 'user', value: 'u7' }] },
        { entries: [{ key: 'model', value: 'gpt-4o' }], hits_addend: '0' },
      ],
    });
    expect(seen[1]).toEqual({
      domain: 'tg-failure',
      hits_addend: 1234,
      descriptors: [{ entries: [{ key: 'model', value: 'gpt-4o' }], hits_addend: '1234' }],
    });
  });

  it("answers OVER_LIMIT with the service's raw body and headers, and passes request headers on OK", async () => {
    const { log } = captureLog();
    const g = make(address, 'FailOpen', pool, log);
    reply = encodeResponse({
      overall_code: 'OVER_LIMIT',
      statuses: [
        { code: 'OVER_LIMIT', current_limit: { requests_per_unit: 10, unit: 'MINUTE' }, limit_remaining: 0, duration_until_reset: '17s' },
        { code: 'OK', current_limit: { requests_per_unit: 5000, unit: 'HOUR' }, limit_remaining: 4000 },
      ],
      response_headers_to_add: [
        { key: 'X-Quota-Policy', value: 'gold' },
        { key: 'Retry-After', value: '17' },
      ],
      raw_body: base64('{"error":"slow down"}'),
    });
    const over = await g.check(facts({ 'x-user-id': 'u8' }));
    expect(over).toMatchObject({ allowed: false, outcome: 'overLimit', status: 429, body: '{"error":"slow down"}' });
    expect(over.headers).toEqual({
      'x-proxy-ratelimited': 'true',
      'x-quota-policy': 'gold',
      'retry-after': '17',
      'x-ratelimit-limit': '10, 10;w=60',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '17',
      // A limiter compiled on its own names the descriptor by its index (a policy adds the level).
      'x-ratelimit-policy': 'global.descriptors[0]',
    });

    reply = encodeResponse({
      overall_code: 'OK',
      statuses: [{ code: 'OK', current_limit: { requests_per_unit: 10, unit: 'SECOND' }, limit_remaining: 9, duration_until_reset: '0.5s' }],
      request_headers_to_add: [{ key: 'x-ratelimit-tier', value: 'gold' }],
      response_headers_to_add: [{ key: 'x-raw', raw_value: base64('bytes') }],
    });
    const ok = await g.check(facts({ 'x-user-id': 'u8' }));
    expect(ok).toMatchObject({ allowed: true, outcome: 'ok', requestHeaders: { 'x-ratelimit-tier': 'gold' } });
    expect(ok.headers).toEqual({ 'x-raw': 'bytes', 'x-ratelimit-limit': '10, 10;w=1', 'x-ratelimit-remaining': '9', 'x-ratelimit-reset': '1', 'x-ratelimit-policy': 'global.descriptors[0]' });
  });
});
