// The trace of one request: builds the events of spec §2 and §6 and sends them to the
// session that claimed the request. Times are microseconds since the request was accepted,
// never decreasing; header values that are credentials are redacted.
import { hostname } from 'node:os';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { NO_EXTRA_CREDENTIALS, redactHeaders, redactPathAndQuery, type AuthState, type ClientCertificateState, type ExtProcPhaseMessage, type ExtraCredentials, type RequestState, type TraceEvent, type TraceMessage, type TransformationState } from '@tollgate/api';
import { connectionTls } from '../pipeline/connection-tls.js';
import type { RequestContext } from '../pipeline/context.js';
import type { RequestStage, ResponseStage } from '../pipeline/events.js';
import type { TraceSession } from './session.js';
import { effectivePolicy } from './effective-policy.js';

export interface TraceEnv {
  readonly podName: string;
  readonly namespace: string;
  readonly gateway: string;
}

export function traceEnvFromProcess(env: NodeJS.ProcessEnv = process.env): TraceEnv {
  return {
    podName: env.POD_NAME || hostname(),
    namespace: env.POD_NAMESPACE || 'standalone',
    gateway: env.GATEWAY_NAME || 'standalone',
  };
}

/** The request as a stage sees it (the path and headers change as filters apply). */
export interface RequestView {
  readonly method: string;
  /** host[:port] the request is addressed to. */
  readonly authority: string;
  readonly path: string;
  readonly query: string;
  readonly headers: Record<string, string | string[] | undefined> | IncomingHttpHeaders;
  /** How the request arrived (https on a TLS listener); http when left out. */
  readonly scheme?: 'http' | 'https';
}

type Severity = TraceEvent['severity'];

/** The credential names a request's snapshots redact: the config's, and the headers its transformation set to credential-like values. */
function credentialsOf(ctx: RequestContext): ExtraCredentials {
  const own = ctx.snapshot.credentials;
  const redact = ctx.transform?.redact;
  if (!redact?.size) return own;
  return { headers: new Set([...own.headers, ...redact]), query: own.query };
}

/** The checks that ran and the consumer, as the trace shows them; undefined when the route has none. */
function authState(ctx: RequestContext): AuthState | undefined {
  if (ctx.auth === null) return undefined;
  const c = ctx.consumer;
  return {
    consumer: c ? { name: c.name, group: c.group, via: c.via, credentialId: c.credentialId } : null,
    checks: ctx.auth.map((o) => ({ kind: o.kind, result: o.allowed ? 'allow' : 'deny', reason: o.reason, note: o.note })),
  };
}

export function severityOf(status: number, transportError = false): Severity {
  if (transportError || status >= 500) return 'error';
  if (status >= 400) return 'warn';
  return 'info';
}

/** "host:80" is "host" for http (spec §2.3: the port only when not the default). */
function withoutDefaultPort(authority: string, scheme: 'http' | 'https'): string {
  const port = scheme === 'https' ? ':443' : ':80';
  return authority.endsWith(port) ? authority.slice(0, -port.length) : authority;
}

export class RequestTracer {
  #last = 0;
  #callStart: number | null = null;
  readonly #startTime: string;
  readonly #source: RequestState['source'];
  readonly #clientCertificate: ClientCertificateState | undefined;
  readonly #version: string;

  constructor(
    readonly session: TraceSession,
    private readonly acceptedAt: bigint,
    req: IncomingMessage,
    private readonly env: TraceEnv,
  ) {
    this.#startTime = new Date(Date.now() - Number((process.hrtime.bigint() - acceptedAt) / 1_000_000n)).toISOString();
    const address = req.socket.remoteAddress ?? '';
    const port = req.socket.remotePort ?? 0;
    this.#source = { address, rawAddress: address, port, rawPort: port };
    // What the handshake checked of a client certificate, as listed facts only (never the PEM).
    const client = connectionTls(req.socket)?.client;
    this.#clientCertificate = client
      ? { verified: client.verified, error: client.error, subject: client.subject, issuer: client.issuer, dnsSans: [...client.dnsSans], uriSans: [...client.uriSans], notAfter: client.notAfter, fingerprint: client.fingerprint }
      : undefined;
    this.#version = `HTTP/${req.httpVersion}`;
  }

  #now(): number {
    const us = Number((process.hrtime.bigint() - this.acceptedAt) / 1000n);
    this.#last = Math.max(this.#last, us);
    return this.#last;
  }

  #emit(message: TraceMessage, severity: Severity = 'info', eventStart: number | null = null): void {
    if (this.session.closed) return;
    this.session.sink.send({ eventStart, eventEnd: this.#now(), severity, message });
  }

  requestState(view: RequestView, backend?: RequestState['backend'], credentials: ExtraCredentials = NO_EXTRA_CREDENTIALS, auth?: AuthState, transformation?: TransformationState): RequestState {
    const headers = redactHeaders(view.headers, credentials);
    const scheme = view.scheme ?? 'http';
    const host = withoutDefaultPort(view.authority, scheme);
    // Credentials in query parameters (api_key=, token=, sig= ...) are redacted like headers.
    const pathAndQuery = redactPathAndQuery(view.query ? `${view.path}?${view.query}` : view.path, credentials);
    return {
      request: {
        method: view.method,
        uri: `${scheme}://${host}${pathAndQuery}`,
        path: view.path,
        pathAndQuery,
        host,
        scheme,
        version: this.#version,
        headers,
        startTime: this.#startTime,
      },
      source: this.#source,
      ...(this.#clientCertificate ? { clientCertificate: this.#clientCertificate } : {}),
      ...(backend ? { backend } : {}),
      ...(auth ? { auth } : {}),
      ...(transformation ? { transformation } : {}),
      env: { ...this.env },
    };
  }

  started(): void {
    this.#emit({ type: 'requestStarted' });
  }

  /**
   * The request as a stage leaves it: as received before routing, as it will go upstream
   * (filters applied) after the route policies, and with its backend in the final request.
   */
  requestSnapshot(stage: RequestStage, ctx: RequestContext): void {
    const upstream = stage === 'route policies' || stage === 'final request';
    const rewritten = upstream ? ctx.upstreamHeaders?.host : undefined;
    const authority = typeof rewritten === 'string' ? rewritten : ctx.authority;
    const view: RequestView = upstream
      ? { method: ctx.method, authority, path: ctx.upstreamPath, query: ctx.upstreamQuery, headers: ctx.upstreamHeaders ?? ctx.headers }
      : { method: ctx.method, authority, path: ctx.path, query: ctx.query, headers: ctx.headers, scheme: ctx.scheme };
    // The backend as routes name it (`<service_host>:<port>` for a Service); the endpoint chosen within it is the backendCallStart target.
    const backend = stage === 'final request' && ctx.backend ? { name: ctx.backend.backend.name, type: 'service' as const, protocol: ctx.backend.endpoint.tls ? ('https' as const) : ('http' as const) } : undefined;
    // The credential headers and parameters of the config's policies too (an apiKey in x-team-key);
    // what the route's checks decided, once they ran (they run just before the route policies).
    const auth = upstream ? authState(ctx) : undefined;
    // What the route's transformation did, once it ran (just before the route policies).
    const transformation = upstream ? ctx.transform?.state : undefined;
    this.#emit({ type: 'requestSnapshot', stage, requestState: this.requestState(view, backend, credentialsOf(ctx), auth, transformation) });
  }

  routeSelection(ctx: RequestContext): void {
    this.#emit({ type: 'routeSelection', selectedRoute: ctx.routeName, evaluatedRoutes: ctx.evaluated ?? [] });
  }

  policySelection(ctx: RequestContext): void {
    this.#emit({ type: 'policySelection', effectivePolicy: effectivePolicy(ctx.listener!.ir, ctx.route?.ir ?? null) });
  }

  backendCallStart(target: string): void {
    this.#emit({ type: 'backendCallStart', target });
    // The call spans from the backendCallStart event to its result.
    this.#callStart = this.#last;
  }

  /** A failure that closed the request is a warning; one the proxy went past (open) too. */
  extProcPhase(phase: Omit<ExtProcPhaseMessage, 'type'>): void {
    this.#emit({ type: 'extProcPhase', ...phase }, phase.result.startsWith('failed') ? 'warn' : 'info');
  }

  backendCallResult(status: number, error: { kind: string; message: string } | null): void {
    this.#emit({ type: 'backendCallResult', status, error }, severityOf(status, error !== null), this.#callStart ?? this.#now());
  }

  responseSnapshot(stage: ResponseStage, code: number, headers: Record<string, string | string[] | undefined>, ctx?: RequestContext): void {
    const credentials = ctx ? credentialsOf(ctx) : NO_EXTRA_CREDENTIALS;
    this.#emit(
      { type: 'responseSnapshot', stage, requestState: { response: { code, headers: redactHeaders(headers, credentials) }, env: { ...this.env } } },
      stage === 'final response' ? severityOf(code) : 'info',
    );
  }

  finished(): void {
    this.#emit({ type: 'requestFinished' });
  }
}
