// Stage 1, listener: the request target normalised (request-target.ts), then the bind's
// listener for the request's host (most specific hostname first). On HTTPS the listener the
// Host selects must be the one the TLS server name (SNI) selected: a connection opened for
// one listener's certificate may not be reused for another's hosts (RFC 9110 §15.5.20, and
// the Gateway API's listener hostname rules), so that answers 421 and the client opens a new
// connection. A Host that no listener serves falls through to the 404 of route selection.
//
// A listener that checks client certificates serves a request only on a connection whose
// handshake checked it with the same validation (its CAs and mode): not one opened for another
// listener of the port (without SNI, the default listener's), nor one opened before the
// listener's validation changed. Those get 421 and their connection closes, so the client's next
// attempt makes a handshake that checks it.
import { ERRORS } from '../errors.js';
import type { BindTls } from '../routing/tls-contexts.js';
import { answerError } from './answer.js';
import { connectionTls } from './connection-tls.js';
import type { RequestContext } from './context.js';
import { publish } from './events.js';

/** Returns false when the request cannot be served here (answered 400 or 421). */
export function selectListener(ctx: RequestContext): boolean {
  if (ctx.observed) publish.requestSnapshot(ctx, 'initial request');
  if (ctx.targetError) {
    answerError(ctx, ERRORS.badRequestTarget, undefined, ctx.targetError);
    return false;
  }
  const bind = ctx.snapshot.binds.get(ctx.port);
  ctx.listener = bind?.listeners.first(ctx.host) ?? null;
  if (bind?.tls && ctx.listener) {
    const sni = ctx.serverName;
    // Without SNI (or naming no listener) the client got the default certificate and
    // asked for no name: the Host alone decides.
    const chosen = sni === null ? undefined : bind.tls.bySni.first(sni);
    if (chosen && chosen.name !== ctx.listener.ir.name) {
      answerError(ctx, ERRORS.misdirected, undefined, `the TLS server name ${sni} selects listener ${chosen.name}; host ${ctx.host} is served by listener ${ctx.listener.ir.name}`);
      return false;
    }
    return clientChecked(ctx, bind.tls);
  }
  return true;
}

/** Whether the connection's handshake checked the client as the request's listener requires; answers 421 when not. */
function clientChecked(ctx: RequestContext, tls: BindTls): boolean {
  const name = ctx.listener!.ir.name;
  const wanted = tls.validation.get(name);
  if (!wanted) return true;
  const conn = connectionTls(ctx.req.socket);
  if (conn && conn.validation === wanted && (conn.client?.verified || wanted.ir.mode === 'AllowInsecureFallback')) {
    ctx.clientCertificate = conn.client;
    return true;
  }
  const why = !conn || conn.validation === null ? `the handshake was made for listener ${conn?.listener ?? '(unknown)'}, which checks no client certificate` : conn.listener === name ? 'the listener\'s client validation changed since the handshake' : `the handshake was made for listener ${conn.listener}, which checks client certificates differently`;
  ctx.res.shouldKeepAlive = false;
  answerError(ctx, ERRORS.clientValidationChanged, { connection: 'close' }, `listener ${name} checks client certificates; ${why}`);
  return false;
}
