// A WebSocket upgrade once the backend answered 101: the response policies run on its headers
// (header filters, x-ratelimit-*, what authorization checks add), the 101 goes to the client,
// and the two connections are joined (upstream/tunnel.ts) until either side ends. The request
// part is over then (its trace finishes, its rate limits settle); the connection's own line in
// the log comes when it closes: bytes each way, duration, who closed it.
import { http } from '@tollgate/kit/node-http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ERRORS } from '../errors.js';
import { Tunnel, type TunnelStats } from '../upstream/tunnel.js';
import { answerError } from './answer.js';
import type { HeaderMap, RequestContext } from './context.js';

/**
 * Whether the chosen backend can take the upgrade; answered here when not. An h2c or h2 backend
 * is spoken to over HTTP/2, where a WebSocket is another exchange (RFC 8441's extended CONNECT)
 * than the HTTP/1.1 upgrade the client sent: refused rather than half translated.
 */
export function upgradeReachesBackend(ctx: RequestContext): boolean {
  const b = ctx.backend!.backend;
  if (b.kind !== 'invalid' && b.protocol !== undefined) {
    ctx.admissions?.refund();
    answerError(ctx, ERRORS.upgradeToH2c);
    return false;
  }
  return true;
}

/** The 101 status line and headers, as the client gets them; a header Node would refuse to write is left out. */
function switchingHead(headers: HeaderMap, protocol: string): string {
  let head = `HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: ${protocol}\r\n`;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      try {
        http.validateHeaderName(name);
        http.validateHeaderValue(name, v);
      } catch {
        continue;
      }
      head += `${name}: ${v}\r\n`;
    }
  }
  return `${head}\r\n`;
}

/** The backend switched protocols: the 101 to the client, then the tunnel (ForwardHooks.onUpgrade). */
export function completeUpgrade(ctx: RequestContext, policies: { onResponseHeaders(status: number, headers: HeaderMap): unknown }, headers: HeaderMap, protocol: string | undefined, backendSocket: Duplex): void {
  const upgrade = ctx.upgrade!;
  const { deps } = ctx;
  policies.onResponseHeaders(101, headers);
  const client = upgrade.socket;
  // The HTTP response object lets go of the connection: from here it carries the other protocol.
  ctx.res.detachSocket(client as Socket);
  const route = ctx.route!.ir.name;
  const backend = ctx.backend!;
  const started = new Date().toISOString();
  const cells = deps.metrics.websocketBytes(route);
  // A tunnel counts as a request in flight on its endpoint for the balancer while it is open.
  backend.endpoint.begin();
  const tunnel = new Tunnel(client, backendSocket, {
    idleMs: deps.upgrades.settings.idleMs,
    onBytes: (direction, n) => (cells[direction].value += n),
    onClose: (stats: TunnelStats) => {
      backend.endpoint.release();
      upgrade.slot.release();
      if (stats.closedBy === 'idle') deps.metrics.countRefusal('websocket_idle');
      deps.upstreamLog.info(
        { route, upstream: backend.name, consumer: ctx.consumer?.name, path: ctx.path, startedAt: started, fromClient: stats.fromClient, toClient: stats.toClient, durationMs: Math.round(stats.durationMs), closedBy: stats.closedBy },
        'websocket closed',
      );
    },
  });
  upgrade.slot.hold(tunnel, upgrade.bind);
  client.write(switchingHead(headers, protocol ?? 'websocket'));
  tunnel.start(upgrade.head);
}
