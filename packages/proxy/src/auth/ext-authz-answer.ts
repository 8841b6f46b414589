// What the extAuthz check sends to its service and gets back, whatever the protocol: the gRPC
// and HTTP clients translate to and from these, and ext-authz.ts decides from them alone.

/** How a header of an answer applies (Envoy's HeaderValueOption actions; ext-authz-headers.ts). */
export type AppendAction = 'APPEND_IF_EXISTS_OR_ADD' | 'ADD_IF_ABSENT' | 'OVERWRITE_IF_EXISTS_OR_ADD' | 'OVERWRITE_IF_EXISTS';

export interface HeaderMutation {
  /** Lower case. */
  readonly name: string;
  readonly value: string;
  readonly action: AppendAction;
}

/** Longest denial body passed to the client; a longer one is replaced by the catalog's text. */
export const MAX_DENIAL_BODY_BYTES = 64 * 1024;

export interface ExtAuthzPeer {
  readonly address: string;
  readonly port: number;
}

/** The request as the service sees it. */
export interface ExtAuthzCall {
  readonly id: string;
  readonly method: string;
  /** Path with "?query" when there is one. */
  readonly path: string;
  readonly host: string;
  readonly scheme: string;
  readonly protocol: string;
  /** Lower-case names, one value each (a repeated header joined with ", "). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body sent (withBody), possibly cut to maxBytes; null when not sent. */
  readonly body: Buffer | null;
  /** The request body's length in bytes, -1 when unknown. */
  readonly size: number;
  readonly source: ExtAuthzPeer;
  readonly destination: ExtAuthzPeer;
}

export type ExtAuthzAnswer =
  | {
      readonly allowed: true;
      /** Request headers to set upstream, in order. */
      readonly upstream: readonly HeaderMutation[];
      /** Request headers (lower case) to remove upstream. */
      readonly remove: readonly string[];
      /** Headers added to the response the client gets. */
      readonly response: readonly HeaderMutation[];
    }
  | {
      readonly allowed: false;
      readonly status: number;
      readonly headers: readonly HeaderMutation[];
      /** The service's body; null: the catalog's (none given, or over MAX_DENIAL_BODY_BYTES). */
      readonly body: { readonly contentType: string; readonly text: string } | null;
    };

export type FailureReason = 'unavailable' | 'timeout' | 'bad_response';

/** The service could not decide: the check takes its failure mode. */
export class ServiceFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    detail: string,
  ) {
    super(detail);
    this.name = 'ServiceFailure';
  }
}

/** A denial status the proxy can send: 200..599, else Envoy's default 403. */
export function denialStatus(code: number): number {
  return Number.isInteger(code) && code >= 200 && code <= 599 ? code : 403;
}
