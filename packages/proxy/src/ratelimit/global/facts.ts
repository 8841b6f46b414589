// What the global limiter's descriptors can see of a request. The pipeline builds one per
// request, lazily (only routes with a global limit pay for it).
import type { IncomingHttpHeaders } from 'node:http';

export interface RequestFacts {
  readonly method: string;
  readonly path: string;
  /** Host without the port. */
  readonly host: string;
  readonly headers: IncomingHttpHeaders;
  readonly sourceAddress: string;
  /** The LLM model from the JSON body, when known. */
  readonly model: string | null;
}
