// A request written byte for byte on a socket, for what an HTTP client library will not send:
// a header twice, odd spacing, an oversized header. The connection is closed after the answer.
import { once } from 'node:events';
import { connect } from 'node:net';

export interface RawAnswer {
  readonly status: number;
  /** Header names in lower case; a repeated header's values joined with ", ". */
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Sends `GET <target>` (or `method`) with `headers` as [name, value] pairs, in order. */
export async function rawRequest(port: number, target: string, headers: readonly (readonly [string, string])[], method = 'GET'): Promise<RawAnswer> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const closed = once(socket, 'close');
  socket.write(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}Connection: close\r\n\r\n`);
  await closed;
  const text = Buffer.concat(chunks).toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const out: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]), headers: out, body: text.slice(end + 4) };
}
