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

/** The message's bytes, as a Buffer over protobufjs's output (no copy). */
export function encodeMessage(type: protobuf.Type, value: object): Buffer {
  const bytes = type.encode(type.fromObject({ ...value })).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
