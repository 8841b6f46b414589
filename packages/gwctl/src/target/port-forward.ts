// A local TCP listener on 127.0.0.1:<ephemeral> whose every connection is carried to a pod's
// port over the API server's portforward subresource (WebSocket), like `kubectl port-forward`.
// A failure to open the tunnel (no kubelet, pod gone, RBAC) is remembered, so the caller can
// report "port-forward failed: <API server's reason>" instead of a bare connection reset.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { PortForward, type KubeConfig } from '@kubernetes/client-node';
// Not re-exported by the package index; the package has no exports map, so the file is public.
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js';
import WebSocket from 'ws';
import { describe } from '../errors.js';

/** The Status message of a refused upgrade (`Unexpected server response: 400` says nothing). */
function statusMessage(code: number | undefined, body: string): string {
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === 'string' && status.message) return `${status.message} (HTTP ${code})`;
  } catch {
    // not a Status object
  }
  return `HTTP ${code}${body.trim() ? `: ${body.trim().split('\n')[0]}` : ''}`;
}

function socketFactory(uri: string, protocols: string[], opts: WebSocket.ClientOptions): WebSocket {
  const ws = new WebSocket(uri, protocols, opts);
  ws.on('unexpected-response', (req, res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (body += c));
    res.on('end', () => {
      ws.emit('error', new Error(statusMessage(res.statusCode, body)));
      req.destroy();
    });
  });
  return ws;
}

export class PortForwarder {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #sockets2ws = new Map<Socket, WebSocket>();
  /** Why the last tunnel failed, or null. */
  lastError: string | null = null;

  private constructor(server: Server) {
    this.#server = server;
  }

  get localPort(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  static async open(kc: KubeConfig, namespace: string, pod: string, port: number): Promise<PortForwarder> {
    const forward = new PortForward(kc, true, new WebSocketHandler(kc, socketFactory));
    const server = createServer();
    const self = new PortForwarder(server);
    server.on('connection', (socket: Socket) => self.#handle(forward, namespace, pod, port, socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return self;
  }

  #handle(forward: PortForward, namespace: string, pod: string, port: number, socket: Socket): void {
    this.#sockets.add(socket);
    socket.on('close', () => {
      this.#sockets.delete(socket);
      const ws = this.#sockets2ws.get(socket);
      this.#sockets2ws.delete(socket);
      ws?.close();
    });
    socket.on('error', () => undefined);
    let errText = '';
    const errStream = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        errText += chunk.toString();
        this.lastError = errText.trim();
        cb();
      },
    });
    forward.portForward(namespace, pod, [port], socket, errStream, socket).then(
      (ws) => {
        const w = ws as WebSocket;
        if (socket.destroyed) return w.close();
        this.#sockets2ws.set(socket, w);
        w.on('close', () => socket.destroy());
        w.on('error', (err) => {
          this.lastError = describe(err);
          socket.destroy();
        });
      },
      (err: unknown) => {
        this.lastError = describe(err);
        socket.destroy();
      },
    );
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
