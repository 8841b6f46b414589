// What the rate limits can see of a request: descriptor entries, keys and their expressions.
// The pipeline builds one per request, lazily (only policies that read it pay for it).
import type { IncomingHttpHeaders } from 'node:http';
import type { ClientCertificateInputs, ConsumerInputs } from '@tollgate/api';

export interface RequestFacts {
  readonly method: string;
  readonly path: string;
  /** Host without the port. */
  readonly host: string;
  readonly headers: IncomingHttpHeaders;
  readonly sourceAddress: string;
  /** The LLM model from the JSON body, when known. */
  readonly model: string | null;
  /** Who is calling, once authentication established it; null before it runs or when no check did. */
  readonly consumer: ConsumerInputs | null;
  /** The client certificate the listener verified (mutual TLS); null when none was. */
  readonly clientCertificate?: ClientCertificateInputs | null;
}
