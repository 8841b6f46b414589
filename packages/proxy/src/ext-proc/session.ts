// One request's conversation with its route's external processor: the stream opened at the
// first phase sent, each phase's answer read (answer.ts), the failure mode applied, and a
// trace event per phase. After a failure under FailOpen the processor is bypassed for the
// rest of the request (the request goes on unprocessed); under FailClosed the failure is
// thrown to the caller, which answers 502 TG_EXT_PROC_FAILED or cuts a response already started.
import type { ExtProcIR, ExtProcPhaseMessage } from '@tollgate/api';
import { editedNames, readAnswer, type HeaderEdits, type PhaseAnswer } from './answer.js';
import type { Phase, ProcessingRequest } from './proto.js';
import type { ExtProcServices } from './services.js';
import { ExtProcFailure, type ProcessorStream } from './stream.js';

const TRACE_PHASE: Record<Phase, ExtProcPhaseMessage['phase']> = {
  request_headers: 'requestHeaders',
  request_body: 'requestBody',
  response_headers: 'responseHeaders',
  response_body: 'responseBody',
};

/** A streamed body's messages so far, reported as one trace event at its end. */
interface StreamedPhase {
  messages: number;
  replaced: number | null;
  headers: Set<string>;
}

/**
 * Where a session's phases go: counted in metrics and, when the request is traced, published
 * (pipeline/ext-proc.ts binds it to the request, so this file knows nothing of the pipeline).
 */
export type PhaseReport = (phase: Omit<ExtProcPhaseMessage, 'type'>) => void;

export class ExtProcSession {
  #stream: Promise<ProcessorStream> | null = null;
  #bypassed = false;
  #closed = false;
  readonly #streamed = new Map<Phase, StreamedPhase>();
  /** Request header edits of the answers so far, applied to the upstream request (pipeline/route-policies.ts). */
  readonly requestEdits: HeaderEdits[] = [];

  constructor(
    readonly ir: ExtProcIR,
    private readonly services: ExtProcServices,
    private readonly report: PhaseReport,
  ) {}

  get bypassed(): boolean {
    return this.#bypassed;
  }

  #open(): Promise<ProcessorStream> {
    return (this.#stream ??= this.services.client(this.ir.service).then((c) => c.open(this.ir.messageTimeoutMs)));
  }

  /**
   * Sends one message of `phase` and reads its answer (a replaced body at most `bodyBound`
   * bytes). Null when the processor is bypassed (FailOpen after a failure). Throws
   * ExtProcFailure under FailClosed.
   */
  async send(phase: Phase, req: ProcessingRequest, bodyBound: number, streamed = false): Promise<PhaseAnswer | null> {
    if (this.#bypassed || this.#closed) return null;
    let answer: PhaseAnswer;
    try {
      const stream = await this.#open();
      answer = readAnswer(await stream.exchange(req), phase, bodyBound);
    } catch (err) {
      const failure = err instanceof ExtProcFailure ? err : new ExtProcFailure('unavailable', String(err));
      this.fail(phase, failure);
      return null;
    }
    if (streamed && answer.kind === 'continue') this.#count(phase, answer);
    else this.#report(phase, answer, streamed ? this.#streamedMessages(phase) + 1 : 1);
    return answer;
  }

  /** The failure mode: FailOpen bypasses the processor from here on; FailClosed throws. */
  fail(phase: Phase, failure: ExtProcFailure): void {
    const open = this.ir.failureMode === 'FailOpen';
    this.report({ phase: TRACE_PHASE[phase], result: open ? 'failedOpen' : 'failedClosed', messages: this.#streamedMessages(phase) + 1, headers: [], bodyBytes: null, note: failure.message });
    this.#streamed.delete(phase);
    this.#bypassed = true;
    this.close();
    if (!open) throw failure;
  }

  #streamedMessages(phase: Phase): number {
    return this.#streamed.get(phase)?.messages ?? 0;
  }

  #count(phase: Phase, answer: Extract<PhaseAnswer, { kind: 'continue' }>): void {
    let s = this.#streamed.get(phase);
    if (!s) this.#streamed.set(phase, (s = { messages: 0, replaced: null, headers: new Set() }));
    s.messages++;
    if (answer.body) s.replaced = (s.replaced ?? 0) + answer.body.length;
    for (const n of editedNames(answer.headers)) s.headers.add(n);
  }

  /** The end of a streamed body: one trace event for all its messages. */
  endStreamed(phase: Phase): void {
    const s = this.#streamed.get(phase);
    if (!s) return;
    this.#streamed.delete(phase);
    this.report({ phase: TRACE_PHASE[phase], result: s.replaced !== null || s.headers.size ? 'mutated' : 'continued', messages: s.messages, headers: [...s.headers], bodyBytes: s.replaced, note: null });
  }

  #report(phase: Phase, answer: PhaseAnswer, messages: number): void {
    const names = editedNames(answer.headers);
    const body = answer.body;
    const result = answer.kind === 'immediate' ? 'immediate' : names.length || body ? 'mutated' : 'continued';
    const note = answer.kind === 'immediate' ? `answered ${answer.status}${answer.details ? `: ${answer.details}` : ''}` : null;
    this.report({ phase: TRACE_PHASE[phase], result, messages, headers: names, bodyBytes: body ? body.length : null, note });
  }

  /** The request is over (or the processor failed): the stream ends. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    void this.#stream?.then((s) => s.close(), () => {});
  }
}
