// A request through the data plane, in the spec's order (§6): listener, gateway policies,
// route selection, cross-origin checks (cors preflights, csrf), authentication and
// authorization, transformation, external processing (extProc), route policies (a direct
// response answers there; then copies to the route's mirrors), backend choice, upstream call
// with the response policies.
// Each stage is a file of its own; a stage that answers the request itself (a refusal, a
// 404, a redirect) returns false and the request ends there. Every stage reads the snapshot
// captured when the request arrived, so a reload never changes the rules under a request in
// flight. Tracing is not woven in: stages publish on diagnostics channels (events.ts).
import { selectListener } from './listener.js';
import { applyGatewayPolicies } from './gateway-policies.js';
import { selectRouteStage } from './route-selection.js';
import { authenticate } from './authenticate.js';
import { checkCrossOrigin } from './cross-origin.js';
import { applyRoutePolicies } from './route-policies.js';
import { transformRequest } from './transform.js';
import { processRequest } from './ext-proc.js';
import { chooseBackend } from './backend-choice.js';
import { sendMirrors } from './mirror.js';
import { callUpstream } from './upstream-call.js';
import { upgradeReachesBackend } from './upgrade.js';
import { announce } from './events.js';
import { readBodyForReplay, readBodyOnce } from './llm-body.js';
import { routeTranslates } from '../llm/formats/format.js';
import type { RequestContext } from './context.js';

export async function handleRequest(ctx: RequestContext): Promise<void> {
  announce(ctx);
  if (!selectListener(ctx)) return;
  // The policy stages answer synchronously when there is nothing to wait for (no policy);
  // their boolean is used as is, since even awaiting a plain value costs a microtask turn.
  let passed = applyGatewayPolicies(ctx);
  if (typeof passed !== 'boolean') passed = await passed;
  if (!passed) return;
  if (!selectRouteStage(ctx)) return;
  if (!checkCrossOrigin(ctx)) return;
  passed = authenticate(ctx);
  if (typeof passed !== 'boolean') passed = await passed;
  if (!passed) return;
  passed = transformRequest(ctx);
  if (typeof passed !== 'boolean') passed = await passed;
  if (!passed) return;
  passed = processRequest(ctx);
  if (typeof passed !== 'boolean') passed = await passed;
  if (!passed) return;
  passed = applyRoutePolicies(ctx);
  if (typeof passed !== 'boolean') passed = await passed;
  if (!passed) return;
  const mirrors = ctx.route!.parts.mirrors;
  // A WebSocket handshake is not copied: without its connection a copy would be a plain GET.
  if (mirrors !== null && !ctx.upgrade) sendMirrors(ctx, mirrors);
  // A backend of another format needs the body whole, read before one is picked (nothing may be
  // awaited between the pick and the call).
  if (!ctx.llm && ctx.hasBody && routeTranslates(ctx.route!.ir, ctx.path)) await readBodyOnce(ctx, true);
  // A route that fails over or retries keeps the body to send it again (within config.maxRetryBodyBytes).
  if (ctx.route!.parts.resilience && !ctx.llm && ctx.hasBody) await readBodyForReplay(ctx);
  if (!chooseBackend(ctx)) return;
  if (ctx.upgrade && !upgradeReachesBackend(ctx)) return;
  await callUpstream(ctx);
}
