// RequestMirror: after the route's filters have shaped the request, a copy goes to each mirror
// backend (to the share of requests each asks for), fire and forget. The copy's answer is read
// and discarded; its failure never touches the client's request, which goes on to its own
// backend at once. A request body is mirrored from memory: a route with mirrors reads it first
// (up to config.maxRequestBodyBytes); a larger body still goes to the backend but is not mirrored.
// On a route that counts tokens a copy spends provider tokens like its request: it holds the
// request's reservation in the limits that admitted the request, and its answer is metered
// and charged to them (docs/rate-limiting.md, "Mirrors").
import type { Dispatcher } from 'undici';
import { chargeSource, usageCharge } from '../llm/usage-charge.js';
import { UsageMeter } from '../llm/usage-meter.js';
import type { CopyHold } from '../ratelimit/policy.js';
import { INVALID_BACKEND } from '../routing/backend-picker.js';
import type { CompiledMirror } from '../routing/compile.js';
import type { RequestContext } from './context.js';

/**
 * Copies in flight at once, across all routes: a mirror backend that stops answering must not
 * hold an unbounded number of requests in this process. Copies beyond it are not sent.
 */
export const MAX_MIRRORS_IN_FLIGHT = 512;

let inFlight = 0;

/** Copies in flight now (for tests). */
export function mirrorsInFlight(): number {
  return inFlight;
}

function chosen(m: CompiledMirror): boolean {
  return m.numerator >= m.denominator || Math.random() * m.denominator < m.numerator;
}

export function sendMirrors(ctx: RequestContext, mirrors: readonly CompiledMirror[]): void {
  const log = ctx.deps.upstreamLog;
  if (ctx.deps.mirrorSignal.aborted) return;
  const body = ctx.llm ? ctx.llm.body : null;
  if (body !== null && !Buffer.isBuffer(body)) {
    log.debug({ route: ctx.route!.ir.name }, `request not mirrored: its body is larger than maxRequestBodyBytes (${ctx.deps.maxRequestBodyBytes})`);
    return;
  }
  const timeoutMs = ctx.route!.ir.timeouts.backendRequestMs || ctx.deps.defaultBackendTimeoutMs;
  const metered = ctx.route!.countsTokens && ctx.admissions !== null;
  for (const m of mirrors) {
    if (!chosen(m)) continue;
    const target = m.pick();
    if (target === null || target === INVALID_BACKEND) {
      log.debug({ route: ctx.route!.ir.name, mirror: m.backend.name }, 'request not mirrored: the mirror backend has no ready endpoint');
      continue;
    }
    if (inFlight >= MAX_MIRRORS_IN_FLIGHT) {
      log.debug({ route: ctx.route!.ir.name, mirror: m.backend.name }, `request not mirrored: ${MAX_MIRRORS_IN_FLIGHT} copies already in flight`);
      continue;
    }
    inFlight++;
    // The copy holds the body in memory, maybe past the request's end: its bytes stay taken.
    ctx.bodyHolders++;
    // On a metered route the copy spends tokens too: it holds a reservation like its request.
    const charge = metered ? ctx.admissions!.copy() : null;
    target.endpoint.pool
      .request({
        method: ctx.method,
        path: ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath,
        // A copy: the backend's own header filters change the original later.
        headers: { ...ctx.upstreamHeaders },
        body,
        headersTimeout: timeoutMs,
        bodyTimeout: ctx.deps.bodyIdleTimeoutMs,
        signal: ctx.deps.mirrorSignal,
        // A TLS backend's name, not the Host header, is the SNI (upstream/backend-tls.ts).
        servername: target.endpoint.servername,
      } as Parameters<typeof target.endpoint.pool.request<null>>[0])
      .then((res) => (charge ? chargeCopy(ctx, res, charge) : res.body.dump()))
      .catch((err: Error & { code?: string }) => log.debug({ route: ctx.route!.ir.name, mirror: target.name, code: err.code }, `mirrored request failed: ${err.message}`))
      .finally(() => {
        charge?.settle(null);
        inFlight--;
        ctx.releaseBody();
      });
  }
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Reads a metered copy's answer through a usage meter and charges its usage, by the rules of
 * the request's own (llm/usage-charge.ts): a 2xx is charged, also when cut short; anything
 * else releases the copy's reservation.
 */
async function chargeCopy(ctx: RequestContext, res: Dispatcher.ResponseData, charge: CopyHold): Promise<void> {
  if (res.statusCode < 200 || res.statusCode >= 300) {
    charge.settle(null);
    await res.body.dump();
    return;
  }
  const meter = new UsageMeter(false, ctx.deps.maxSseEventBytes);
  meter.onHeaders(first(res.headers['content-type']), first(res.headers['content-encoding']));
  try {
    for await (const chunk of res.body) meter.transform(chunk as Buffer);
    meter.flush();
  } finally {
    // What the mirror produced before a failure is still charged.
    const usage = meter.result();
    const tokens = await usageCharge(ctx.llm, usage, ctx.deps.rateLimitLog);
    charge.settle(tokens);
    ctx.deps.metrics.countTokens(ctx.route!.ir.name, ctx.llm?.model ?? null, chargeSource(usage), tokens);
    if (ctx.consumer) ctx.deps.metrics.countConsumerTokens(ctx.consumer.name, tokens);
  }
}
