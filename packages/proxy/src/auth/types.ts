// The authentication kinds as the pipeline runs them: each kind compiles its IR into an
// AuthCheck; the authenticate stage (pipeline/authenticate.ts) runs a route's checks in a fixed
// order and applies what they decide. A check sees the request through AuthRequest only, so
// the kinds do not depend on the pipeline.
import type { IncomingHttpHeaders } from 'node:http';
import type { AuthKind, AuthPassReason, AuthReason, ClientCertificateInputs } from '@tollgate/api';
import type { ErrorSpec } from '../errors.js';

export type { AuthKind, AuthPassReason, AuthReason };

/** Who is calling, as an authentication kind established it. Never holds a credential. */
export interface Consumer {
  /** apiKey: the key's consumer; basicAuth: the user; jwt: the consumer claim (default sub). */
  readonly name: string;
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
  /** jwt: top-level claims as strings (JSON for other values), bounded (cel/surfaces.ts); null otherwise. */
  readonly claims: Readonly<Record<string, string>> | null;
  readonly via: 'apiKey' | 'basicAuth' | 'jwt' | 'oidc';
  /** What identifies the credential in traces and logs: an API key's digest prefix, a JWT provider's name; never the credential. */
  readonly credentialId: string;
}

/** The request as a check sees it. */
export interface AuthRequest {
  readonly method: string;
  readonly path: string;
  /** Without "?"; "" when none. */
  readonly query: string;
  readonly host: string;
  readonly authority: string;
  readonly scheme: 'http' | 'https';
  readonly headers: IncomingHttpHeaders;
  /** Names and values as received, alternating (Node's rawHeaders): repeated headers, which `headers` folds or drops, are all here. */
  readonly rawHeaders: readonly string[];
  readonly sourceAddress: string;
  readonly sourcePort: number;
  /** The proxy's own address and port of the connection (extAuthz sends them as the destination). */
  readonly destinationAddress?: string;
  readonly destinationPort?: number;
  /** HTTP version as the client spoke it, e.g. "HTTP/1.1". */
  readonly protocol?: string;
  /** Set by the checks that ran before (authentication runs before authorization). */
  readonly consumer: Consumer | null;
  /** The client certificate the listener verified (mutual TLS); null when none was. */
  readonly clientCertificate?: ClientCertificateInputs | null;
  /** The model of an LLM request body, when the body was read (AuthCheck.needsBody). */
  readonly model: string | null;
  /** The body as read (bounded by config.maxRequestBodyBytes); null when there is none or it was not read. */
  readonly body: Buffer | null;
  /**
   * The body was read for a check and was longer than config.maxRequestBodyBytes: it goes
   * upstream unread, so `model` is null without meaning "no model" (a check that reads it
   * refuses rather than decide on what it could not see).
   */
  readonly bodyTooLarge: boolean;
}

export interface AuthPass {
  readonly ok: true;
  /** The consumer this check established (authentication kinds). */
  readonly consumer?: Consumer;
  /** Request headers (lower case) removed before forwarding: the credential. */
  readonly removeHeaders?: readonly string[];
  /** Query parameters removed before forwarding: a credential read from the query. */
  readonly removeQuery?: readonly string[];
  /** Request headers (lower case) set on the forwarded request (claims, an authorization service's headers). */
  readonly setHeaders?: Readonly<Record<string, string>>;
  /** Headers added to the response the client gets (several Set-Cookie values as a list). */
  readonly responseHeaders?: Readonly<Record<string, string | string[]>>;
  /** What decided, for the trace (e.g. a JWT provider's name, a rule's name); never a credential. */
  readonly note?: string;
  /** Metric label of a pass other than a plain allow, e.g. failed_open (an authorization service that could not decide, failureMode FailOpen); default allowed. */
  readonly reason?: AuthPassReason;
}

export interface AuthDenial {
  readonly ok: false;
  /** Catalog entry: its status and code are what the client gets (unless `status` says otherwise). */
  readonly error: ErrorSpec;
  /** Overrides error.status (an authorization service's own denial status). */
  readonly status?: number;
  /** Metric label, from the fixed set AUTH_REASONS. */
  readonly reason: AuthReason;
  /** What was wrong, safe to show the client (never echoes a credential). */
  readonly detail: string;
  /** WWW-Authenticate value (401 answers). */
  readonly challenge?: string;
  /** Extra response headers (an authorization service's; oidc's Location and Set-Cookie list). */
  readonly headers?: Readonly<Record<string, string | string[]>>;
  /** A body the client gets instead of the catalog's (an authorization service's own answer). */
  readonly body?: { readonly contentType: string; readonly text: string };
}

export type AuthVerdict = AuthPass | AuthDenial;

export interface AuthCheck {
  readonly kind: AuthKind;
  /** The check reads the request body (authorization rules over llm.model, extAuthz withBody). */
  readonly needsBody: boolean;
  run(req: AuthRequest): AuthVerdict | Promise<AuthVerdict>;
}
