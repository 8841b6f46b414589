// The streams and environment a command runs with: the process's own in the binary,
// captured ones in tests.
import type { Readable, Writable } from 'node:stream';

export interface Io {
  readonly stdout: Writable & { isTTY?: boolean; columns?: number; rows?: number };
  readonly stderr: Writable & { isTTY?: boolean };
  readonly stdin: Readable & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
}

export function processIo(): Io {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env };
}

export function write(stream: Writable, text: string): void {
  stream.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
}
