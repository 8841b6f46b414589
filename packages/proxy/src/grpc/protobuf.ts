// The services' messages as .proto source (each service's module writes the subset of Envoy's
// definitions it speaks), parsed by protobufjs once, by the first config that names the
// service (protobufjs itself is loaded then: feature-module.ts).
import type Protobuf from 'protobufjs';
import { protobufModule } from '../feature-module.js';

/** A service's messages: the parsed root, its request and its response type. */
export interface ServiceProtos {
  readonly root: Protobuf.Root;
  readonly request: Protobuf.Type;
  readonly response: Protobuf.Type;
}

/**
 * An accessor of a service's messages, parsed from `sources` on its first call (the compile of a
 * config naming the service calls it, so the request path finds them parsed).
 */
export function serviceProtos(sources: readonly string[], request: string, response: string): () => ServiceProtos {
  let protos: ServiceProtos | undefined;
  return () => {
    if (protos) return protos;
    const root = parseProtos(...sources);
    protos = { root, request: root.lookupType(request), response: root.lookupType(response) };
    return protos;
  };
}

/** One root with every source parsed (field names kept as written) and resolved. */
function parseProtos(...sources: string[]): Protobuf.Root {
  const protobuf = protobufModule();
  const root = new protobuf.Root();
  for (const source of sources) protobuf.parse(source, root, { keepCase: true });
  root.resolveAll();
  return root;
}

/** A message read from bytes as a plain object (proto field names, enums by name, bytes as Buffers, defaults written out); throws on bytes that are not one. */
export function decodeMessage<T>(type: Protobuf.Type, bytes: Buffer): T {
  return type.toObject(type.decode(bytes), { longs: Number, enums: String, bytes: Buffer, defaults: true, oneofs: false }) as T;
}

/** The message's bytes, as a Buffer over protobufjs's output (no copy). */
export function encodeMessage(type: Protobuf.Type, value: object): Buffer {
  const bytes = type.encode(type.fromObject({ ...value })).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
