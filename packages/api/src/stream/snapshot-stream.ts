// The snapshot stream's messages (proto/snapshots.proto) as TypeScript values, and the gRPC
// method both sides register. The .proto file is the definition; it is parsed once at load
// so the controller and the proxy encode exactly the same messages.
import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';

const PROTO_URL = new URL('../../proto/snapshots.proto', import.meta.url);

export const SNAPSHOT_STREAM_PATH = '/tollgate.snapshots.v1.SnapshotService/Stream';

/**
 * Trailer the controller sets when it ends a stream as planned (its maximum age, the expiry of
 * the token it was opened with), naming why: the proxy reconnects at once rather than after a
 * backoff, with the token it holds now.
 */
export const RECONNECT_TRAILER = 'tollgate-reconnect';

export interface Hello {
  readonly gateway: string;
  readonly pod: string;
  readonly podNamespace: string;
  readonly version: string;
  /** The proxy resolves deltas; without it every push is the full form. */
  readonly deltas?: boolean;
}
export interface Ack {
  readonly version: string;
  readonly nonce: string;
}
export interface Nack {
  readonly nonce: string;
  readonly error: string;
  /** The push was a delta the proxy could not resolve: send the same version in full. */
  readonly wantFull?: boolean;
}
export type ProxyMessage = { readonly hello: Hello } | { readonly ack: Ack } | { readonly nack: Nack };

/** A push as received. */
export interface SnapshotPush {
  readonly version: string;
  readonly nonce: string;
  /** encodeSnapshotParts() skeleton as UTF-8 (or, with no routes and counts, encodeSnapshot() text). */
  readonly snapshot: Buffer;
  /** Each route's JSON text as UTF-8, listener after listener (in a delta, the new routes' only). */
  readonly routes: readonly Buffer[];
  /** Routes per listener, in document order. */
  readonly routeCounts: readonly number[];
  /** "" for the full form; in a delta, the version `routeRefs` refer to. */
  readonly baseVersion: string;
  /** In a delta, one per route: 0 the next of `routes`, k > 0 the base's route at position k-1. */
  readonly routeRefs: readonly number[];
  /** Each entry of the Service endpoints as UTF-8 JSON (in a delta, the new entries only). */
  readonly endpoints: readonly Buffer[];
  /** In a delta, one per entry: 0 the next of `endpoints`, k > 0 the base's entry at position k-1. */
  readonly endpointRefs: readonly number[];
}

/** What a push carries besides its version and nonce. */
export type PushPayload = Omit<SnapshotPush, 'version' | 'nonce'>;

function load(): { proxy: protobuf.Type; push: protobuf.Type } {
  const root = protobuf.parse(readFileSync(PROTO_URL, 'utf8'), { keepCase: false }).root;
  root.resolveAll();
  return { proxy: root.lookupType('tollgate.snapshots.v1.ProxyMessage'), push: root.lookupType('tollgate.snapshots.v1.SnapshotPush') };
}

const types = load();

function bytes(u: Uint8Array): Buffer {
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/**
 * A payload encoded once, for every proxy it goes to (a Gateway's proxies are sent the same
 * version, most of them against the same base): each push then encodes only its version and
 * nonce. Protobuf fields may come in any order, so the two encodings are concatenated.
 */
export class PreparedPayload {
  readonly bytes: Buffer;
  constructor(payload: PushPayload) {
    this.bytes = bytes(types.push.encode(types.push.fromObject(payload)).finish());
  }
}

/** A push as the controller sends it. */
export interface OutgoingPush {
  readonly version: string;
  readonly nonce: string;
  readonly payload: PreparedPayload;
}

export function encodeProxyMessage(m: ProxyMessage): Buffer {
  return bytes(types.proxy.encode(types.proxy.fromObject(m)).finish());
}

/** Throws when the bytes are not a ProxyMessage or carry none of its kinds. */
export function decodeProxyMessage(b: Buffer): ProxyMessage {
  const o = types.proxy.toObject(types.proxy.decode(b), { defaults: true, oneofs: true }) as Record<string, unknown> & { kind?: string };
  switch (o.kind) {
    case 'hello':
      return { hello: o.hello as Hello };
    case 'ack':
      return { ack: o.ack as Ack };
    case 'nack':
      return { nack: o.nack as Nack };
    default:
      throw new Error('message carries neither hello, ack nor nack');
  }
}

export function encodeSnapshotPush(m: SnapshotPush | OutgoingPush): Buffer {
  if (!('payload' in m)) return bytes(types.push.encode(types.push.fromObject(m)).finish());
  const head = types.push.encode(types.push.fromObject({ version: m.version, nonce: m.nonce })).finish();
  return Buffer.concat([head, m.payload.bytes]);
}

export function decodeSnapshotPush(b: Buffer): SnapshotPush {
  const o = types.push.toObject(types.push.decode(b), { defaults: true, bytes: Buffer }) as SnapshotPush;
  return {
    version: o.version,
    nonce: o.nonce,
    snapshot: o.snapshot,
    routes: o.routes,
    routeCounts: o.routeCounts,
    baseVersion: o.baseVersion,
    routeRefs: o.routeRefs,
    endpoints: o.endpoints,
    endpointRefs: o.endpointRefs,
  };
}

/**
 * The service as @grpc/grpc-js takes it (a ServiceDefinition, written out so this package
 * needs no gRPC dependency): `server.addService(SNAPSHOT_SERVICE, ...)` and
 * `makeGenericClientConstructor(SNAPSHOT_SERVICE, ...)`.
 */
export const SNAPSHOT_SERVICE = {
  Stream: {
    path: SNAPSHOT_STREAM_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: encodeProxyMessage,
    requestDeserialize: decodeProxyMessage,
    responseSerialize: encodeSnapshotPush,
    responseDeserialize: decodeSnapshotPush,
    originalName: 'stream',
  },
} as const;
