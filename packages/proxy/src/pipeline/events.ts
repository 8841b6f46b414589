// The request path's instrumentation points, as node:diagnostics_channel channels (undici's
// model). A subscriber to `tollgate:request:start` (a trace session) may mark the request
// observed; every later point publishes only for observed requests, so a request nobody
// watches pays one `hasSubscribers` read at its start and one boolean per point after.
import { channel } from 'node:diagnostics_channel';
import type { ExtProcPhaseMessage } from '@tollgate/api';
import type { RequestContext } from './context.js';

export type RequestStage = 'initial request' | 'gateway policies' | 'route policies' | 'final request';
export type ResponseStage = 'backend response ready' | 'final response';
export type HeaderValues = Record<string, string | string[] | undefined>;

export interface StartMessage {
  readonly ctx: RequestContext;
}
export interface RequestSnapshotMessage {
  readonly ctx: RequestContext;
  readonly stage: RequestStage;
}
export interface RouteMessage {
  readonly ctx: RequestContext;
}
export interface BackendStartMessage {
  readonly ctx: RequestContext;
  readonly target: string;
}
export interface BackendResultMessage {
  readonly ctx: RequestContext;
  readonly status: number;
  readonly error: { readonly kind: string; readonly message: string } | null;
}
export interface ResponseSnapshotMessage {
  readonly ctx: RequestContext;
  readonly stage: ResponseStage;
  readonly status: number;
  readonly headers: HeaderValues;
}
export interface ExtProcMessage {
  readonly ctx: RequestContext;
  readonly phase: Omit<ExtProcPhaseMessage, 'type'>;
}
export interface FinishMessage {
  readonly ctx: RequestContext;
}

export const channels = {
  /** A request was accepted; subscribers may set `ctx.observed`. */
  start: channel('tollgate:request:start'),
  /** The request as a stage leaves it (spec §6 requestSnapshot). */
  requestSnapshot: channel('tollgate:request:snapshot'),
  /** Route selection is done: ctx.route (or null) and ctx.evaluated. */
  route: channel('tollgate:request:route'),
  /** The effective policy of the selected route is known (ctx.listener, ctx.route). */
  policy: channel('tollgate:request:policy'),
  backendStart: channel('tollgate:request:backend-start'),
  backendResult: channel('tollgate:request:backend-result'),
  responseSnapshot: channel('tollgate:response:snapshot'),
  /** A phase of the route's external processor ended (ext-proc/). */
  extProc: channel('tollgate:request:ext-proc'),
  /** The request is complete; nothing more is published for it. */
  finish: channel('tollgate:request:finish'),
};

// Typed publishers: each call site stays one line and the message shapes stay in one place.
export const publish = {
  requestSnapshot: (ctx: RequestContext, stage: RequestStage) => channels.requestSnapshot.publish({ ctx, stage } satisfies RequestSnapshotMessage),
  route: (ctx: RequestContext) => channels.route.publish({ ctx } satisfies RouteMessage),
  policy: (ctx: RequestContext) => channels.policy.publish({ ctx } satisfies RouteMessage),
  backendStart: (ctx: RequestContext, target: string) => channels.backendStart.publish({ ctx, target } satisfies BackendStartMessage),
  backendResult: (ctx: RequestContext, status: number, error: BackendResultMessage['error']) =>
    channels.backendResult.publish({ ctx, status, error } satisfies BackendResultMessage),
  responseSnapshot: (ctx: RequestContext, stage: ResponseStage, status: number, headers: HeaderValues) =>
    channels.responseSnapshot.publish({ ctx, stage, status, headers } satisfies ResponseSnapshotMessage),
  extProc: (ctx: RequestContext, phase: ExtProcMessage['phase']) => channels.extProc.publish({ ctx, phase } satisfies ExtProcMessage),
  finish: (ctx: RequestContext) => channels.finish.publish({ ctx } satisfies FinishMessage),
};

/** Offers a new request to the subscribers of `start`; true when one now observes it. */
export function announce(ctx: RequestContext): boolean {
  if (channels.start.hasSubscribers) channels.start.publish({ ctx } satisfies StartMessage);
  return ctx.observed;
}
