// Tollgate's RLS v3, external authorization and external processing codecs (src/ratelimit/global/proto.ts,
// src/auth/ext-authz-proto.ts, src/ext-proc/proto.ts: subsets of Envoy's .proto files, parsed by protobufjs) checked against Envoy's own definitions through the official Go types
// (e2e/tools/envoy-proto): every field it declares has Envoy's number, type and cardinality, and
// bytes written by either side read back the same on the other. A field number both sides of a
// hand-written test got wrong would pass a test that used only this codec.
import type protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { extAuthzProtos } from '../src/auth/ext-authz-proto.js';
import { decodeProcessingResponse, encodeProcessingRequest, extProcProtos } from '../src/ext-proc/proto.js';
import { decodeResponse, encodeRequest, rlsProtos } from '../src/ratelimit/global/proto.js';
import { describeMessages, envoyProtoAvailability, officialDecode, officialEncode } from './support/envoy-proto.js';

const availability = envoyProtoAvailability();
const REQUEST = 'envoy.service.ratelimit.v3.RateLimitRequest';
const RESPONSE = 'envoy.service.ratelimit.v3.RateLimitResponse';

/** Every field of every message the codec declares: message full name -> field name -> shape. */
function ourFields(root: protobuf.Root): Record<string, Record<string, { number: number; kind: string; repeated: boolean; type?: string }>> {
  const out: Record<string, Record<string, { number: number; kind: string; repeated: boolean; type?: string }>> = {};
  const visit = (ns: protobuf.NamespaceBase) => {
    for (const nested of ns.nestedArray) {
      if ('fieldsArray' in nested) {
        const type = nested as protobuf.Type;
        const fields: (typeof out)[string] = {};
        for (const f of type.fieldsArray) {
          if (f.map) {
            // A map is, on the wire and in Envoy's descriptors, a repeated <Name>Entry message.
            const entry = `${type.fullName.slice(1)}.${f.name.charAt(0).toUpperCase()}${f.name.slice(1)}Entry`;
            fields[f.name] = { number: f.id, kind: 'message', repeated: true, type: entry };
            continue;
          }
          f.resolve();
          const resolved = f.resolvedType;
          const kind = resolved === null ? f.type : 'values' in resolved ? 'enum' : 'message';
          fields[f.name] = { number: f.id, kind, repeated: f.repeated, ...(resolved ? { type: resolved.fullName.slice(1) } : {}) };
        }
        out[type.fullName.slice(1)] = fields;
      }
      if ('nestedArray' in nested) visit(nested as protobuf.NamespaceBase);
    }
  };
  visit(root);
  return out;
}

/** Each declared field whose number, type or cardinality is not Envoy's. */
function mismatches(root: protobuf.Root, ...messages: string[]): { declared: number; mismatched: string[] } {
  const official = describeMessages(...messages);
  const ours = ourFields(root);
  const declared = Object.values(ours).reduce((n, fields) => n + Object.keys(fields).length, 0);
  const mismatched = Object.entries(ours).flatMap(([message, fields]) =>
    Object.entries(fields)
      .filter(([name, shape]) => JSON.stringify(official[message]?.[name]) !== JSON.stringify({ number: shape.number, kind: shape.kind, repeated: shape.repeated, ...(shape.type ? { type: shape.type } : {}) }))
      .map(([name, shape]) => `${message}.${name}: ours ${JSON.stringify(shape)}, Envoy's ${JSON.stringify(official[message]?.[name] ?? 'not defined')}`),
  );
  return { declared, mismatched };
}

describe.skipIf(!availability.run)("the RLS v3 codec against Envoy's definitions", () => {
  it("declares each field with Envoy's number, type and cardinality", () => {
    const { declared, mismatched } = mismatches(rlsProtos().root, REQUEST, RESPONSE);
    // The codec declares the fields the gateway reads and writes (23 of them): all compared.
    expect(declared).toBeGreaterThanOrEqual(23);
    expect(mismatched).toEqual([]);
  });

  it('writes requests that Envoy reads field for field, with no field Envoy does not define', () => {
    const bytes = encodeRequest({
      domain: 'tollgate',
      hits_addend: 1234,
      descriptors: [
        { entries: [{ key: 'user', value: 'u7' }, { key: 'model', value: 'gpt-4o' }] },
        { entries: [{ key: 'team', value: 'a' }], hits_addend: { value: 0 } },
        { entries: [{ key: 'team', value: 'b' }], hits_addend: { value: 56 } },
        { entries: [{ key: 'consumer', value: 'alice' }], limit: { requests_per_unit: 4_294_967_295, unit: 'MONTH' }, hits_addend: { value: 0 } },
        { entries: [{ key: 'consumer', value: '' }], limit: { requests_per_unit: 7, unit: 'DAY' } },
      ],
    });
    expect(officialDecode(REQUEST, bytes)).toEqual({
      domain: 'tollgate',
      hits_addend: 1234,
      descriptors: [
        { entries: [{ key: 'user', value: 'u7' }, { key: 'model', value: 'gpt-4o' }] },
        // A wrapper that is set, even to 0 ("check only"), is present on the wire.
        { entries: [{ key: 'team', value: 'a' }], hits_addend: '0' },
        { entries: [{ key: 'team', value: 'b' }], hits_addend: '56' },
        // The limit override: Envoy's RateLimitOverride, its unit Envoy's RateLimitUnit.
        { entries: [{ key: 'consumer', value: 'alice' }], limit: { requests_per_unit: 4_294_967_295, unit: 'MONTH' }, hits_addend: '0' },
        { entries: [{ key: 'consumer' }], limit: { requests_per_unit: 7, unit: 'DAY' } },
      ],
    });
  });

  it('reads every field of responses that Envoy writes', () => {
    const bytes = officialEncode(RESPONSE, {
      overall_code: 'OVER_LIMIT',
      statuses: [
        { code: 'OVER_LIMIT', current_limit: { name: 'per-user', requests_per_unit: 10, unit: 'MINUTE' }, limit_remaining: 0, duration_until_reset: '17.250s' },
        { code: 'OK', current_limit: { requests_per_unit: 5000, unit: 'WEEK' }, limit_remaining: 4000 },
      ],
      response_headers_to_add: [{ key: 'x-quota', value: 'gold' }, { key: 'x-raw', raw_value: Buffer.from('bytes').toString('base64') }],
      request_headers_to_add: [{ key: 'x-tier', value: 'gold' }],
      raw_body: Buffer.from('{"error":"slow down"}').toString('base64'),
    });
    const r = decodeResponse(bytes);
    expect({ ...r, raw_body: r.raw_body.toString(), response_headers_to_add: r.response_headers_to_add.map((h) => ({ ...h, raw_value: h.raw_value.toString() })), request_headers_to_add: r.request_headers_to_add.map((h) => ({ ...h, raw_value: h.raw_value.toString() })) }).toEqual({
      overall_code: 'OVER_LIMIT',
      statuses: [
        { code: 'OVER_LIMIT', current_limit: { name: 'per-user', requests_per_unit: 10, unit: 'MINUTE' }, limit_remaining: 0, duration_until_reset: { seconds: 17, nanos: 250_000_000 } },
        { code: 'OK', current_limit: { name: '', requests_per_unit: 5000, unit: 'WEEK' }, limit_remaining: 4000, duration_until_reset: null },
      ],
      response_headers_to_add: [{ key: 'x-quota', value: 'gold', raw_value: '' }, { key: 'x-raw', value: '', raw_value: 'bytes' }],
      request_headers_to_add: [{ key: 'x-tier', value: 'gold', raw_value: '' }],
      raw_body: '{"error":"slow down"}',
    });
  });
});

describe.skipIf(!availability.run)("the external authorization codec against Envoy's definitions", () => {
  it("declares each field with Envoy's number, type and cardinality", () => {
    const { declared, mismatched } = mismatches(extAuthzProtos().root, 'envoy.service.auth.v3.CheckRequest', 'envoy.service.auth.v3.CheckResponse');
    // The fields the proxy sends and reads (about 40): all compared.
    expect(declared).toBeGreaterThanOrEqual(35);
    expect(mismatched).toEqual([]);
  });
});

describe.skipIf(!availability.run)("the external processing codec against Envoy's definitions", () => {
  it("declares each field with Envoy's number, type and cardinality", () => {
    const { declared, mismatched } = mismatches(extProcProtos().root, 'envoy.service.ext_proc.v3.ProcessingRequest', 'envoy.service.ext_proc.v3.ProcessingResponse');
    expect(declared).toBeGreaterThanOrEqual(30);
    expect(mismatched).toEqual([]);
  });

  it('writes request headers Envoy reads as sent, and reads the mutations and immediate answers Envoy writes', () => {
    const bytes = encodeProcessingRequest({ request_headers: { headers: { headers: [{ key: ':path', raw_value: Buffer.from('/v1?q=1') }] }, end_of_stream: true } });
    expect(officialDecode('envoy.service.ext_proc.v3.ProcessingRequest', bytes)).toEqual({ request_headers: { headers: { headers: [{ key: ':path', raw_value: Buffer.from('/v1?q=1').toString('base64') }] }, end_of_stream: true } });
    const mutation = {
      request_headers: {
        response: {
          header_mutation: { set_headers: [{ header: { key: 'x-a', raw_value: Buffer.from('1').toString('base64') }, append_action: 'APPEND_IF_EXISTS_OR_ADD' }], remove_headers: ['x-b'] },
        },
      },
    };
    const read = decodeProcessingResponse(officialEncode('envoy.service.ext_proc.v3.ProcessingResponse', mutation));
    expect(read.request_headers?.response?.header_mutation?.set_headers[0]).toMatchObject({ header: { key: 'x-a', raw_value: Buffer.from('1') }, append_action: 'APPEND_IF_EXISTS_OR_ADD' });
    expect(read.request_headers?.response?.header_mutation?.remove_headers).toEqual(['x-b']);
    const immediate = decodeProcessingResponse(officialEncode('envoy.service.ext_proc.v3.ProcessingResponse', { immediate_response: { status: { code: 'Forbidden' }, body: Buffer.from('no').toString('base64'), details: 'd' } }));
    expect(immediate.immediate_response).toMatchObject({ status: { code: 403 }, body: Buffer.from('no'), details: 'd' });
  });
});
