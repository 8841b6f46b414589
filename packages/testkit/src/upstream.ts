// A real backend on an ephemeral loopback port: echoes the request as JSON, or runs a handler
// with the request body read.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
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

/** An upstream that echoes `{method, url, headers, body}` as JSON unless given a handler. */
export async function startUpstream(handler?: Handler, opts: { readBody?: boolean } = {}): Promise<Upstream> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    if (opts.readBody === false && handler) return handler(req, res, Buffer.alloc(0));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (handler) return handler(req, res, body);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString() }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    server,
    requests,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}
