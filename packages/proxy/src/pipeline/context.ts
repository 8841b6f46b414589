// The state of one request as it moves through the pipeline: what arrived, and what each stage
// decided. One object per request, created with every field so its shape never changes (a
// class, not a growing literal: V8 keeps one hidden class for all requests). Stages read and
// write it; nothing else carries request state between them.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Readable } from 'node:stream';
import type { HeaderModifierIR, PathMatchIR, TransformationState } from '@tollgate/api';
import type { UpstreamTarget } from '../routing/backend-picker.js';
import type { LlmRequest } from '../llm/request-body.js';
import type { ResponseTranslator } from '../llm/formats/anthropic-response.js';
import type { ChargeCap } from '../ratelimit/charge-cap.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import type { Admissions } from '../ratelimit/policy.js';
import type { RetryBudgetSettings } from '../routing/retry-budget.js';
import type { CoolDowns } from '../upstream/cool-downs.js';
import type { AuthKind, AuthPassReason, AuthReason, Consumer } from '../auth/types.js';
import type { CompiledListener, CompiledRoute, CompiledSnapshot } from '../routing/compile.js';
import type { ClientCertificateFacts } from '../routing/client-validation.js';
import type { CorsAnswer } from '../policies/cors.js';
import { normalizeHost } from '../routing/hostname.js';
import type { Logger } from 'pino';
import type { BytesBudget } from './body-budget.js';
import type { ExtProcServices } from '../ext-proc/services.js';
import type { ExtProcSession } from '../ext-proc/session.js';
import type { AttemptPlan } from './attempt-plan.js';
import type { InFlight } from './inflight.js';
import type { UpgradeRequest, Upgrades } from './upgrades.js';
import { parseRequestTarget, type PathSettings } from './request-target.js';

/** What the pipeline needs from the running proxy, shared by all requests. */
export interface PipelineDeps {
  readonly metrics: ProxyMetrics;
  readonly rateLimitLog: Logger;
  readonly upstreamLog: Logger;
  /** Aborted at shutdown: mirrored copies still in flight are dropped. */
  readonly mirrorSignal: AbortSignal;
  readonly defaultBackendTimeoutMs: number;
  /** config.connectAttempts: endpoints of its backend a request may try when it could not be sent. */
  readonly connectAttempts: number;
  /** config.retryBudgetPercent and retryBudgetMinConcurrency: what each route's RetryBudget allows. */
  readonly retryBudget: RetryBudgetSettings;
  /** config.maxRetryBodyBytes: a larger request body is not kept, and its request is sent once. */
  readonly maxRetryBodyBytes: number;
  /** The backends cooling down (429 or 503 answers), recorded by routes that fail over or retry. */
  readonly coolDowns: CoolDowns;
  readonly bodyIdleTimeoutMs: number;
  readonly paths: PathSettings;
  /** config.maxSseLineBytes: an SSE event from a backend longer than this stops usage parsing. */
  readonly maxSseEventBytes: number;
  /** config.maxRequestBodyBytes: the most a metered route reads of a request body. */
  readonly maxRequestBodyBytes: number;
  /** config.maxBufferedRequestBytes: the request-body bytes all requests may hold at once. */
  readonly bodyBudget: BytesBudget;
  /** config.maxTokensChargedPerResponse: the most one response is charged to token limits. */
  readonly chargeCap: ChargeCap;
  readonly authLog: Logger;
  /** Upgraded connections (WebSockets): their cap, idle timeout, and the ones open now. */
  readonly upgrades: Upgrades;
  /** Channels to the external processors (extProc), one per address. */
  readonly extProc: ExtProcServices;
}

/** What one authentication or authorization check decided, for the trace, the access log and metrics. */
export interface AuthOutcome {
  readonly kind: AuthKind;
  readonly allowed: boolean;
  /** `allowed`, or the denial's reason (a metric label). */
  readonly reason: AuthPassReason | AuthReason;
  /** What decided or what was wrong (a provider, a rule); never a credential. */
  readonly note: string | null;
}

/** What the checks that passed ask of the forwarded request and of the response. */
export interface AuthEffects {
  readonly removeHeaders: string[];
  readonly setHeaders: Record<string, string>;
  readonly removeQuery: string[];
  readonly responseHeaders: Record<string, string | string[]>;
}

export type HeaderMap = Record<string, string | string[] | undefined>;

/** What the route's transformation decided (pipeline/transform.ts), for the stages after it and the trace. */
export interface TransformEffects {
  readonly state: TransformationState;
  /** Applied to the upstream request after the checks' effects, before the route's filters. */
  readonly requestHeaders: HeaderModifierIR | null;
  /** Applied to the backend's response after the route's filters. */
  readonly responseHeaders: HeaderModifierIR | null;
  /** The client's headers with the request header edits made: what the rate limits after it read; null: as received. */
  readonly headers: IncomingHttpHeaders | null;
  /** Headers whose values the trace shows redacted (credential-like values set by the transformation). */
  readonly redact: ReadonlySet<string>;
}

export class RequestContext {
  // What arrived.
  readonly method: string;
  readonly rawHost: string | undefined;
  /** Host without port, lower case: what listeners and routes match. */
  readonly host: string;
  /** Path as matched by routes, without the query. */
  readonly path: string;
  /** Query string without "?" ("" when none). */
  readonly query: string;
  /** The client's headers, as received. */
  readonly headers: IncomingHttpHeaders;
  /** Why the request target cannot be served (answered 400), or null. */
  readonly targetError: string | null;

  /** True when a subscriber of the request channels (a trace session) watches this request. */
  observed = false;
  /** A WebSocket upgrade request: the client's connection, handed over by the HTTP server; null for every other request. */
  upgrade: UpgradeRequest | null = null;

  // What the stages decide.
  listener: CompiledListener | null = null;
  route: CompiledRoute | null = null;
  /** The path match that selected the route (URLRewrite and redirects rewrite against it). */
  matched: PathMatchIR | null = null;
  /** Routes tried during selection, in order; collected only for observed requests. */
  evaluated: string[] | null = null;
  /** Who is calling, once an authentication check established it. */
  consumer: Consumer | null = null;
  /** What the connection's handshake established about a client certificate; null when the listener checks none. */
  clientCertificate: ClientCertificateFacts | null = null;
  /** The authentication and authorization checks that ran, in order; null when none did. */
  auth: AuthOutcome[] | null = null;
  /** What passed checks ask of the forwarded request; null when nothing. */
  authEffects: AuthEffects | null = null;
  /** What the route's transformation did; null when it has none (or it has not run yet). */
  transform: TransformEffects | null = null;
  /** The route's external processor for this request (pipeline/ext-proc.ts); null without extProc. */
  extProc: ExtProcSession | null = null;
  /** The request body as the processor passes it on (extProc STREAMED); null: the client's, or ctx.llm's. */
  processedBody: Readable | null = null;
  /** The route's cors for this request (not a preflight): what every answer to it carries; null without cors. */
  cors: CorsAnswer | null = null;
  /** Rate-limit state; exists only once a policy applies. */
  admissions: Admissions | null = null;
  /** The parsed LLM body; read only when a limit needs it. */
  llm: LlmRequest | null = null;
  /** Headers for the upstream request, built by the route policies stage. */
  upstreamHeaders: HeaderMap | null = null;
  /** Path for the upstream request (after URLRewrite). */
  upstreamPath: string;
  /** Query for the upstream request, without "?" (a credential read from the query is taken out). */
  upstreamQuery: string;
  backend: UpstreamTarget | null = null;
  /** Where further attempts go, on a route that fails over or retries; null elsewhere. */
  attempts: AttemptPlan | null = null;
  /** Makes the backend's answer the client's format, when the backend speaks another API (translate.ts). */
  translator: ResponseTranslator | null = null;
  /** Status sent to the client, once known. */
  status = 0;
  /** Catalog code of a transport failure of the upstream call, for the request log. */
  error: string | null = null;
  /** Bytes of its body this request took from the budget (deps.bodyBudget). */
  bufferedBytes = 0;
  /**
   * Who still holds the body in memory: the request, and each mirrored copy in flight. The
   * bytes go back to the budget when the last lets go, since a copy may outlive its request.
   */
  bodyHolders = 1;

  constructor(
    readonly snapshot: CompiledSnapshot,
    readonly port: number,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly entry: InFlight,
    readonly deps: PipelineDeps,
  ) {
    this.method = req.method ?? 'GET';
    this.headers = req.headers;
    const url = req.url ?? '/';
    const target = parseRequestTarget(url, deps.paths);
    if (target.ok) {
      this.path = target.path;
      this.query = target.query;
      this.targetError = null;
    } else {
      const q = url.indexOf('?');
      this.path = q < 0 ? url : url.slice(0, q);
      this.query = '';
      this.targetError = target.reason;
    }
    // An absolute-form target's authority is the host (RFC 9112 §3.2.2), whatever Host says;
    // an HTTP/2 request's is its :authority (RFC 9113 §8.3.1), which stands for Host.
    this.rawHost = (target.ok && target.authority) || req.headers.host || (req.headers[':authority'] as string | undefined);
    this.host = normalizeHost(this.rawHost);
    this.upstreamPath = this.path;
    this.upstreamQuery = this.query;
  }

  /** Takes `n` bytes of body from the process's budget (llm/request-body.ts BodyAccount). */
  takeBodyBytes(n: number): boolean {
    if (!this.deps.bodyBudget.take(n)) {
      this.deps.metrics.countRefusal('body_budget');
      return false;
    }
    this.bufferedBytes += n;
    return true;
  }

  /** One holder of the body lets go of it (the request at its end, a mirrored copy at its own). */
  releaseBody(): void {
    if (--this.bodyHolders === 0 && this.bufferedBytes > 0) {
      this.deps.bodyBudget.giveBack(this.bufferedBytes);
      this.bufferedBytes = 0;
    }
  }

  /** https when the request came over a TLS listener. */
  get scheme(): 'http' | 'https' {
    return (this.req.socket as TLSSocket).encrypted === true ? 'https' : 'http';
  }

  /** The SNI name the client sent in its ClientHello, lower case; null on plain HTTP or without SNI. */
  get serverName(): string | null {
    const name = (this.req.socket as TLSSocket).servername;
    return typeof name === 'string' && name ? name.toLowerCase() : null;
  }

  /** Host and port the client addressed: its Host header, or the address it connected to. */
  get authority(): string {
    if (this.rawHost) return this.rawHost;
    const s = this.req.socket;
    return s.localFamily === 'IPv6' ? `[${s.localAddress}]:${s.localPort}` : `${s.localAddress}:${s.localPort}`;
  }

  /** The route's name, or null before one is selected. */
  get routeName(): string | null {
    return this.route?.ir.name ?? null;
  }

  /** Whether the client sent a body (a stream the upstream call forwards, or the LLM stage reads). */
  get hasBody(): boolean {
    const h = this.headers;
    const len = h['content-length'];
    if (h['transfer-encoding'] !== undefined || (len !== undefined && len !== '0')) return true;
    // HTTP/2 frames a body without either header: there is one unless the HEADERS frame ended the stream.
    return this.req.httpVersionMajor === 2 && len === undefined && (this.req as unknown as { stream: { endAfterHeaders: boolean } }).stream.endAfterHeaders === false;
  }
}
