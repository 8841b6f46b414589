// gRPC's length-prefixed messages on an HTTP/2 stream: a flag byte (0: not compressed), the
// length as 4 bytes big-endian, the message. Compression is never asked for (no
// grpc-accept-encoding is sent), so a compressed message is the peer's error.

const PREFIX = 5;

/** One message, framed. */
export function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(PREFIX + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, PREFIX);
  return out;
}

/**
 * Reads messages from the chunks of a stream, which split and join them anywhere. Bounded: a
 * message declared over `maxBytes` is refused before its bytes are read.
 */
export class MessageReader {
  #buffered: Buffer[] = [];
  #length = 0;

  constructor(private readonly maxBytes: number) {}

  /** The messages the chunk completes, or why the stream is refused. */
  push(chunk: Buffer): Buffer[] | string {
    this.#buffered.push(chunk);
    this.#length += chunk.length;
    const out: Buffer[] = [];
    while (this.#length >= PREFIX) {
      const head = this.#peek(PREFIX);
      if (head[0] !== 0) return 'a compressed message, which was not asked for';
      const size = head.readUInt32BE(1);
      if (size > this.maxBytes) return `a message of ${size} bytes is over the ${this.maxBytes} read`;
      if (this.#length < PREFIX + size) break;
      out.push(this.#take(PREFIX + size).subarray(PREFIX));
    }
    return out;
  }

  #peek(n: number): Buffer {
    const first = this.#buffered[0]!;
    if (first.length >= n) return first;
    return this.#join().subarray(0, n);
  }

  #take(n: number): Buffer {
    const all = this.#buffered.length === 1 ? this.#buffered[0]! : this.#join();
    const taken = all.subarray(0, n);
    const rest = all.subarray(n);
    this.#buffered = rest.length ? [rest] : [];
    this.#length = rest.length;
    return taken;
  }

  #join(): Buffer {
    const all = Buffer.concat(this.#buffered, this.#length);
    this.#buffered = [all];
    return all;
  }
}
