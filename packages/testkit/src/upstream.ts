// A real backend on an ephemeral loopback port: echoes the request as JSON, or runs a handler
// with the request body read.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';

export interface Upstream {
  readonly port: number;
  /** `127.0.0.1:<port>`. */
  readonly host: string;
  readonly url: string;
  readonly server: Server;
  /** Every request received, in order. */
  readonly requests: IncomingMessage[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

/** Serve HTTPS with this certificate; `clientCa` set: a client certificate signed by it is required. */
export interface UpstreamTls {
  readonly cert: string;
  readonly key: string;
  readonly clientCa?: string;
  readonly minVersion?: 'TLSv1.2' | 'TLSv1.3';
  readonly maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** An upstream that echoes `{method, url, headers, body}` as JSON unless given a handler. */
export async function startUpstream(handler?: Handler, opts: { readBody?: boolean; tls?: UpstreamTls } = {}): Promise<Upstream> {
  const requests: IncomingMessage[] = [];
  const t = opts.tls;
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    requests.push(req);
    if (opts.readBody === false && handler) return handler(req, res, Buffer.alloc(0));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (handler) return handler(req, res, body);
      res.setHeader('content-type', 'application/json');
      // Over TLS, also what the connection was: the SNI name and the client certificate's CN.
      const socket = req.socket as Partial<TLSSocket>;
      const tls = socket.encrypted ? { servername: socket.servername, client: socket.getPeerCertificate?.()?.subject?.CN ?? null } : undefined;
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString(), ...(tls ? { tls } : {}) }));
    });
  };
  const server: Server = t
    ? createTlsServer({ cert: t.cert, key: t.key, minVersion: t.minVersion, maxVersion: t.maxVersion, ...(t.clientCa ? { ca: t.clientCa, requestCert: true, rejectUnauthorized: true } : {}) }, listener)
    : createServer(listener);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host: `127.0.0.1:${port}`,
    url: `${t ? 'https' : 'http'}://127.0.0.1:${port}`,
    server,
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}
