// The services' messages as .proto source (each service's module writes the subset of Envoy's
// definitions it speaks), parsed by protobufjs once when the module loads.
import protobuf from 'protobufjs';

/** One root with every source parsed (field names kept as written) and resolved. */
export function parseProtos(...sources: string[]): protobuf.Root {
  const root = new protobuf.Root();
  for (const source of sources) protobuf.parse(source, root, { keepCase: true });
  root.resolveAll();
  return root;
}

/** A message read from bytes as a plain object (proto field names, enums by name, bytes as Buffers, defaults written out); throws on bytes that are not one. */
export function decodeMessage<T>(type: protobuf.Type, bytes: Buffer): T {
  return type.toObject(type.decode(bytes), { longs: Number, enums: String, bytes: Buffer, defaults: true, oneofs: false }) as T;
}

/** The message's bytes, as a Buffer over protobufjs's output (no copy). */
export function encodeMessage(type: protobuf.Type, value: object): Buffer {
  const bytes = type.encode(type.fromObject({ ...value })).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
