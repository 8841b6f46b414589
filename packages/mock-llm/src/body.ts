import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too-large' };

/**
 * Reads the request body, buffering at most `limit` bytes. An oversized body is still read to its
 * end (and dropped) before the caller answers 413: closing a connection with unread bytes makes the
 * kernel send RST, and the client could then lose the 413 itself.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on('end', () => {
      if (size > limit) resolve({ ok: false, reason: 'too-large' });
      else resolve({ ok: true, body: chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, size) });
    });
    req.on('error', reject);
  });
}
