// Stage 7, response policies: what the gateway does to the backend's response on its way to
// the client (ResponseHeaderModifier filters, the x-ratelimit-* headers, the LLM usage meter),
// and, once the response is complete, the LLM tokens charged to the limits that admitted it.
import type { IncomingHttpHeaders } from 'node:http';
import { tokenizerLoaded } from '../llm/estimate.js';
import { chargeSource, usageCharge } from '../llm/usage-charge.js';
import type { TokenSource } from '../metrics/metrics.js';
import { MAX_HELD_BYTES, UsageMeter } from '../llm/usage-meter.js';
import type { ResponseTranslator } from '../llm/formats/anthropic-response.js';
import { usageFormat } from '../llm/formats/format.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import { decorateAnswer } from '../policies/cors.js';
import { backendFilters } from '../routing/backend-picker.js';
import type { ForwardHooks } from '../upstream/forward.js';
import type { HeaderMap, RequestContext } from './context.js';
import { publish } from './events.js';
import { completeUpgrade } from './upgrade.js';
import { responseProcessor } from './ext-proc.js';
import type { ExtProcResponse } from '../ext-proc/response.js';
import type { Duplex } from 'node:stream';

const EMPTY = Buffer.alloc(0);

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The hooks the upstream call runs as the response arrives. One per request. */
export class ResponsePolicies implements ForwardHooks {
  /** Set when the response headers arrived (for the upstream latency). */
  headersAt = 0;
  readonly meter: UsageMeter | null;
  readonly transform?: (chunk: Buffer) => Buffer;
  readonly flush?: () => Buffer | Promise<Buffer>;
  readonly finalStatus?: () => number;
  /** The route's external processor's response phases (pipeline/ext-proc.ts); undefined without one. */
  readonly processor: ExtProcResponse | undefined;
  /** On a route that fails over or retries: the plan's judge of each answer (attempt-plan.ts). */
  judge?: (status: number, headers: IncomingHttpHeaders) => boolean;

  /** Status the backend answered; tokens are charged for 2xx responses only. */
  #status = 0;
  #charged = false;
  /**
   * Body bytes kept back until the charge (null: forwarded as they come), while the tokenizer
   * is not loaded or while the charge goes to a rate limit service. The end of a JSON body is
   * its content-length: a client would have all of it before a charge that waits for the
   * tokenizer or the service, and its next request could pass a limit it has already spent. A
   * JSON completion is of no use to a client before its end anyway.
   */
  #deferred: Buffer[] | null = null;
  #deferredBytes = 0;

  /**
   * A format translation (llm/formats/): the backend's answer becomes the client's format first,
   * so the meter reads the usage the client sees (a translated stream hands it over itself).
   */
  readonly #translator: ResponseTranslator | null;

  constructor(
    private readonly ctx: RequestContext,
    translator: ResponseTranslator | null = null,
  ) {
    const route = ctx.route!;
    this.processor = responseProcessor(ctx);
    this.#translator = translator;
    this.meter = route.countsTokens ? new UsageMeter(ctx.llm?.injectedUsage ?? false, ctx.deps.maxSseEventBytes, translator ? 'openai' : usageFormat(ctx.path)) : null;
    const meter = this.meter;
    if (translator) {
      this.finalStatus = () => translator.finalStatus();
      this.transform = meter ? (c) => this.#forward(meter.transform(translator.transform(c))) : (c) => translator.transform(c);
      this.flush = () => {
        const tail = translator.flush();
        return meter ? this.#meterFlush(meter, tail.length ? meter.transform(tail) : EMPTY) : tail;
      };
    } else if (meter) {
      this.transform = (c) => this.#forward(meter.transform(c));
      this.flush = () => this.#meterFlush(meter, EMPTY);
    }
  }

  /** Charged before the response's last bytes go out: a client's next request sees its usage. Only the first estimate of the process waits (for the tokenizer to load). */
  #meterFlush(meter: UsageMeter, before: Buffer): Buffer | Promise<Buffer> {
    const last = meter.flush();
    const rest = this.#release(before.length && last.length ? Buffer.concat([before, last]) : before.length ? before : last);
    const charging = this.chargeTokens();
    return charging ? charging.then(() => rest) : rest;
  }

  #forward(out: Buffer): Buffer {
    const deferred = this.#deferred;
    if (!deferred) return out;
    deferred.push(out);
    this.#deferredBytes += out.length;
    // No more than the meter would hold is kept back: a larger body goes on as it comes (its
    // usage is still read as it passes; only an estimate would then trail its end).
    return this.#deferredBytes > MAX_HELD_BYTES ? this.#release(EMPTY) : EMPTY;
  }

  #release(rest: Buffer): Buffer {
    const deferred = this.#deferred;
    if (!deferred) return rest;
    this.#deferred = null;
    if (rest.length) deferred.push(rest);
    return deferred.length === 1 ? deferred[0]! : Buffer.concat(deferred);
  }

  /**
   * Charges the LLM usage once, for a successful response (also one cut short mid-body). A
   * promise while the tokenizer loads for the process's first estimate (until it settles the
   * request keeps its reservation) and while a rate limit service takes the charge (bounded by
   * its timeout).
   */
  chargeTokens(): Promise<void> | undefined {
    if (this.#charged || !this.meter || this.#status < 200 || this.#status >= 300) return undefined;
    this.#charged = true;
    return chargeTokens(this.ctx, this.meter);
  }

  /** The backend switched protocols (a WebSocket): pipeline/upgrade.ts takes it from here. */
  onUpgrade(headers: HeaderMap, protocol: string | undefined, socket: Duplex): void {
    completeUpgrade(this.ctx, this, headers, protocol, socket);
  }

  onResponseHeaders(status: number, headers: HeaderMap): boolean {
    const ctx = this.ctx;
    this.#status = status;
    // An answer that is not charged (not 2xx) gives its reservations back now, before a byte of
    // it reaches the client: the client's next request, on whichever thread takes it, meets the
    // budget without them. (Settled once: the end of the exchange settles nothing more.)
    if (status >= 300) ctx.admissions?.settle(null);
    this.headersAt = performance.now();
    ctx.entry.stage = 'responding';
    if (ctx.observed) {
      publish.backendResult(ctx, status, null);
      publish.responseSnapshot(ctx, 'backend response ready', status, headers);
    }
    const hold = this.#translator?.onHeaders(status, headers) ?? false;
    for (const m of ctx.route!.parts.responseModifiers) applyHeaderModifier(headers, m);
    // The answering backendRef's own, after the route's.
    const own = backendFilters(ctx.backend!.backend);
    if (own) for (const f of own) if (f.type === 'ResponseHeaderModifier') applyHeaderModifier(headers, f);
    // The route's transformation, after the filters; the gateway's own headers (rate limits, checks) after it.
    const transformed = ctx.transform?.responseHeaders;
    if (transformed) applyHeaderModifier(headers, transformed);
    if (ctx.admissions) Object.assign(headers, ctx.admissions.responseHeaders());
    // Headers an authorization check adds to the response (an extAuthz service's response_headers_to_add).
    if (ctx.authEffects) addAuthHeaders(headers, ctx.authEffects.responseHeaders);
    // The route's cors decides the Access-Control-* headers, not the backend.
    if (ctx.cors) decorateAnswer(ctx.cors.cors, ctx.cors.allowOrigin, headers);
    const source = this.#translator?.usageSource() ?? null;
    if (this.meter && source) this.meter.readFrom(source);
    else if (this.meter) {
      this.meter.onHeaders(first(headers['content-type']), first(headers['content-encoding']));
      if (this.meter.rewrites) delete headers['content-length'];
      if (this.meter.readsAtEnd && status >= 200 && status < 300 && (!tokenizerLoaded() || ctx.admissions?.chargesGlobalTokens)) this.#deferred = [];
    }
    if (ctx.observed) publish.responseSnapshot(ctx, 'final response', status, headers);
    return hold;
  }
}

/** Charges a finished LLM response to every token limit that admitted it (spec §3.1). */
function chargeTokens(ctx: RequestContext, meter: UsageMeter): Promise<void> | undefined {
  const usage = meter.result();
  const source = chargeSource(usage);
  const tokens = usageCharge(ctx.llm, usage, ctx.deps.rateLimitLog);
  if (typeof tokens !== 'number') return tokens.then((n) => settleTokens(ctx, n, source));
  return settleTokens(ctx, tokens, source);
}

/** The promise of the rate limit service's answer when global Tokens descriptors are charged. */
function settleTokens(ctx: RequestContext, total: number, source: TokenSource): Promise<void> | undefined {
  const llm = ctx.llm;
  const route = ctx.route!.ir.name;
  if (llm?.unparsed) ctx.deps.rateLimitLog.debug({ route, reason: llm.unparsed }, 'LLM request body not parsed; tokens estimated');
  const charged = ctx.deps.chargeCap.charge(total, route);
  const answered = ctx.admissions?.settle(charged);
  ctx.deps.metrics.countTokens(route, llm?.model ?? null, source, charged);
  if (ctx.consumer) ctx.deps.metrics.countConsumerTokens(ctx.consumer.name, charged);
  return answered;
}

/** An authentication check's response headers; its Set-Cookie values beside the backend's, never instead of them. */
function addAuthHeaders(headers: Record<string, string | string[] | undefined>, add: Readonly<Record<string, string | string[]>>): void {
  for (const [name, value] of Object.entries(add)) {
    const had = headers[name];
    headers[name] = name === 'set-cookie' && had !== undefined ? [...[had].flat(), ...[value].flat()] : value;
  }
}
