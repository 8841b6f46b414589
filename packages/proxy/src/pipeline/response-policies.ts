// Stage 7, response policies: what the gateway does to the backend's response on its way to
// the client (ResponseHeaderModifier filters, the x-ratelimit-* headers, the LLM usage meter),
// and, once the response is complete, the LLM tokens charged to the limits that admitted it.
import { estimateTokens } from '../llm/estimate.js';
import { UsageMeter } from '../llm/usage-meter.js';
import { applyHeaderModifier } from '../filters/header-modifier.js';
import type { ForwardHooks } from '../upstream/forward.js';
import type { HeaderMap, RequestContext } from './context.js';
import { publish } from './events.js';

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The hooks the upstream call runs as the response arrives. One per request. */
export class ResponsePolicies implements ForwardHooks {
  /** Set when the response headers arrived (for the upstream latency). */
  headersAt = 0;
  readonly meter: UsageMeter | null;
  readonly transform?: (chunk: Buffer) => Buffer;
  readonly flush?: () => Buffer;

  /** Status the backend answered; tokens are charged for 2xx responses only. */
  #status = 0;
  #charged = false;

  constructor(private readonly ctx: RequestContext) {
    const route = ctx.route!;
    this.meter = route.countsTokens ? new UsageMeter(ctx.llm?.injectedUsage ?? false, ctx.deps.maxSseEventBytes) : null;
    if (this.meter) {
      const meter = this.meter;
      this.transform = (c) => meter.transform(c);
      // Charged before the response's last bytes go out: a client's next request sees its usage.
      this.flush = () => {
        const rest = meter.flush();
        this.chargeTokens();
        return rest;
      };
    }
  }

  /** Charges the LLM usage once, for a successful response (also one cut short mid-body). */
  chargeTokens(): void {
    if (this.#charged || !this.meter || this.#status < 200 || this.#status >= 300) return;
    this.#charged = true;
    chargeTokens(this.ctx, this.meter);
  }

  onResponseHeaders(status: number, headers: HeaderMap): void {
    const ctx = this.ctx;
    this.#status = status;
    this.headersAt = performance.now();
    ctx.entry.stage = 'responding';
    if (ctx.observed) {
      publish.backendResult(ctx, status, null);
      publish.responseSnapshot(ctx, 'backend response ready', status, headers);
    }
    for (const m of ctx.route!.responseModifiers) applyHeaderModifier(headers, m);
    if (ctx.admissions) Object.assign(headers, ctx.admissions.responseHeaders());
    if (this.meter) {
      this.meter.onHeaders(first(headers['content-type']), first(headers['content-encoding']));
      if (this.meter.rewrites) delete headers['content-length'];
    }
    if (ctx.observed) publish.responseSnapshot(ctx, 'final response', status, headers);
  }
}

/** Charges a finished LLM response to every token limit that admitted it (spec §3.1). */
function chargeTokens(ctx: RequestContext, meter: UsageMeter): void {
  const usage = meter.result();
  const llm = ctx.llm;
  const route = ctx.route!.ir.name;
  let total = usage.reported;
  const estimated = total === null;
  if (total === null) total = estimateTokens(llm?.promptText ?? '', usage.completionText) + Math.ceil(usage.extraCompletionChars / 4);
  if (llm?.unparsed) ctx.deps.rateLimitLog.debug({ route, reason: llm.unparsed }, 'LLM request body not parsed; tokens estimated');
  ctx.admissions?.settle(total);
  ctx.deps.metrics.countTokens(route, llm?.model ?? null, estimated ? 'estimated' : 'reported', total);
}
