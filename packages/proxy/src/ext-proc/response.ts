// The response's phases (upstream/forward.ts awaits them in order, the backend's body paused
// meanwhile): the status and headers as the gateway would send them, then the body as the
// policy's responseBodyMode says: NONE passes it on, STREAMED sends each chunk (the usage
// meter has read it first, so token accounting sees the backend's real usage), BUFFERED sends
// it whole up to maxBufferedBytes. A failure under FailClosed becomes a ProcessorRefusal.
import { EXT_PROC_BOUNDS } from '@tollgate/api';
import { ERRORS } from '../errors.js';
import { ProcessorRefusal, type ProcessedHead, type ResponseProcessor } from '../upstream/forward.js';
import { applyEdits } from './answer.js';
import type { ExtProcSession } from './session.js';
import { ExtProcFailure } from './stream.js';
import { wireHeaders } from './wire-headers.js';

const EMPTY = Buffer.alloc(0);
const CONTINUE: ProcessedHead = { replace: false };

/** Runs `f`; an ExtProcFailure (FailClosed) becomes the refusal forward.ts answers with. */
async function closed<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof ExtProcFailure) throw new ProcessorRefusal(ERRORS.extProcFailed, err.message);
    throw err;
  }
}

export class ExtProcResponse implements ResponseProcessor {
  /** BUFFERED: the body so far; null once it went on unprocessed (over the bound under FailOpen). */
  #held: Buffer[] | null = [];
  #heldBytes = 0;

  constructor(
    private readonly session: ExtProcSession,
    /** A HEAD request: its answer has no body whatever its headers say. */
    private readonly headRequest: boolean,
  ) {}

  head(status: number, headers: Record<string, string | string[] | undefined>): Promise<ProcessedHead> {
    const ir = this.session.ir;
    // A body the processor may replace has a length nobody knows yet.
    if (ir.responseBodyMode !== 'NONE' && headers['content-length'] !== undefined) delete headers['content-length'];
    if (ir.responseHeaderMode === 'SKIP') return Promise.resolve(CONTINUE);
    return closed(async () => {
      const bodiless = status === 204 || status === 304 || this.headRequest;
      const a = await this.session.send('response_headers', { response_headers: { headers: { headers: wireHeaders([[':status', String(status)]], headers) }, end_of_stream: bodiless } }, 0);
      if (!a) return CONTINUE;
      if (a.kind === 'immediate') {
        const out: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
        applyEdits(out, a.headers);
        return { replace: true, status: a.status, headers: out, body: a.body };
      }
      applyEdits(headers, a.headers);
      return CONTINUE;
    });
  }

  body(chunk: Buffer, end: boolean): Promise<Buffer> {
    const ir = this.session.ir;
    if (ir.responseBodyMode === 'NONE' || this.session.bypassed) return Promise.resolve(this.#release(chunk));
    return closed(() => (ir.responseBodyMode === 'STREAMED' ? this.#streamed(chunk, end) : this.#buffered(chunk, end)));
  }

  async #streamed(chunk: Buffer, end: boolean): Promise<Buffer> {
    // Empty chunks are not sent, except the end of the body.
    if (!chunk.length && !end) return EMPTY;
    const a = await this.session.send('response_body', { response_body: { body: chunk, end_of_stream: end } }, EXT_PROC_BOUNDS.maxStreamedChunkBytes, true);
    if (end) this.session.endStreamed('response_body');
    return a?.kind === 'continue' && a.body ? a.body : chunk;
  }

  async #buffered(chunk: Buffer, end: boolean): Promise<Buffer> {
    const held = this.#held;
    if (!held) return chunk;
    if (chunk.length) held.push(chunk);
    this.#heldBytes += chunk.length;
    const max = this.session.ir.maxBufferedBytes;
    if (this.#heldBytes > max) {
      // Throws under FailClosed; under FailOpen the body goes on as it is.
      this.session.fail('response_body', new ExtProcFailure('too_large', `the response body is over maxBufferedBytes (${max})`));
      return this.#release(EMPTY);
    }
    if (!end) return EMPTY;
    const whole = this.#release(EMPTY);
    const a = await this.session.send('response_body', { response_body: { body: whole, end_of_stream: true } }, max);
    return a?.kind === 'continue' && a.body ? a.body : whole;
  }

  /** What was held back, with `chunk` after it; nothing is held from here on. */
  #release(chunk: Buffer): Buffer {
    const held = this.#held;
    this.#held = null;
    if (!held?.length) return chunk;
    if (chunk.length) held.push(chunk);
    return Buffer.concat(held);
  }
}
