// A chat backend that holds its responses until the test releases them, so "in flight" is a
// state a test controls rather than a race (token reservations, concurrent admissions).
import { EventEmitter, once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { startUpstream, type Upstream } from '@tollgate/testkit';

/** A chat backend that answers only when released, with the usage the request's x-usage header names. */
export interface HeldLlm {
  readonly upstream: Upstream;
  /** Requests received (and held) so far. */
  readonly arrived: number;
  readonly events: EventEmitter;
  /** Answers every held request: 200 with usage, or the given status. */
  releaseAll(status?: number): void;
}

export async function heldLlm(): Promise<HeldLlm> {
  const held: { res: ServerResponse; usage: number }[] = [];
  const events = new EventEmitter();
  let arrived = 0;
  const upstream = await startUpstream((req, res) => {
    arrived++;
    held.push({ res, usage: Number(req.headers['x-usage'] ?? 0) });
    events.emit('arrived');
    events.emit('progress');
  });
  return {
    upstream,
    events,
    get arrived() {
      return arrived;
    },
    releaseAll(status = 200) {
      for (const { res, usage } of held.splice(0)) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status === 200 ? { choices: [{ message: { content: 'ok' } }], usage: { total_tokens: usage } } : { error: { message: 'failed' } }));
      }
    },
  };
}

/** Resolves once `n` requests were either answered by the gateway or arrived at the backend. */
export async function settledOrArrived(llm: HeldLlm, answered: () => number, n: number): Promise<void> {
  while (answered() + llm.arrived < n) await once(llm.events, 'progress');
}


/**
 * Sends `n` requests at once; resolves once each was answered by the gateway or is held at the
 * backend, with the answers still to come (release the backend to get the held ones).
 */
export async function heldBurst<T>(llm: HeldLlm, n: number, send: () => Promise<T>): Promise<Promise<T>[]> {
  let answered = 0;
  const pending = Array.from({ length: n }, () =>
    send().then((r) => {
      answered++;
      llm.events.emit('progress');
      return r;
    }),
  );
  await settledOrArrived(llm, () => answered, n);
  return pending;
}
