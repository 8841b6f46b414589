// Real WebSocket peers for the proxy's tests: a `ws` server as the backend (echo, recording
// each upgrade request it got), a raw TCP backend that completes the handshake and then
// misbehaves, and a `ws` client whose outcome is awaited as an event: open, or the HTTP answer
// that refused it.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';

/** The `ws` client's type, for suites outside this package (which do not depend on `ws` themselves). */
export type WsClient = WebSocket;

export interface WsBackend {
  readonly host: string;
  /** The headers of each upgrade request that reached it, in order. */
  readonly upgrades: IncomingHttpHeaders[];
  /** Its side of each connection it accepted. */
  readonly sockets: WebSocket[];
  close(): Promise<void>;
}

/**
 * A `ws` server echoing each message back as it came (text as text, binary as binary). It picks
 * the first subprotocol the client offers and adds `x-backend: ws-echo` to its 101.
 */
export async function startWsEcho(): Promise<WsBackend> {
  const upgrades: IncomingHttpHeaders[] = [];
  const sockets: WebSocket[] = [];
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (protocols) => protocols.values().next().value ?? false });
  wss.on('headers', (headers: string[], req: IncomingMessage) => {
    upgrades.push(req.headers);
    headers.push('x-backend: ws-echo');
  });
  wss.on('connection', (ws) => {
    sockets.push(ws);
    ws.on('message', (data: RawData, isBinary: boolean) => ws.send(data, { binary: isBinary }));
  });
  await once(wss, 'listening');
  const { port } = wss.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    upgrades,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => resolve());
      }),
  };
}

/** The Sec-WebSocket-Accept of a key (RFC 6455 §4.2.2). */
export function acceptOf(key: string): string {
  return createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
}

export interface RawBackend {
  readonly host: string;
  /** Resolves with the socket of the first connection once its 101 is written. */
  readonly upgraded: Promise<Socket>;
  close(): Promise<void>;
}

/** A TCP server that answers the first upgrade request with a valid 101 and hands its socket to the test. */
export async function startRawWsBackend(): Promise<RawBackend> {
  let resolveUpgraded!: (s: Socket) => void;
  const upgraded = new Promise<Socket>((r) => (resolveUpgraded = r));
  const open = new Set<Socket>();
  const server: Server = createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    let text = '';
    const onData = (c: Buffer): void => {
      text += c.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      const key = /^sec-websocket-key:\s*(\S+)/im.exec(text.slice(0, end))?.[1] ?? '';
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptOf(key)}\r\n\r\n`);
      resolveUpgraded(socket);
    };
    socket.on('data', onData);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    upgraded,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export type Dialled = { readonly kind: 'open'; readonly ws: WebSocket; readonly headers: IncomingHttpHeaders } | { readonly kind: 'refused'; readonly status: number; readonly headers: IncomingHttpHeaders; readonly body: string };

/** Opens a WebSocket with the `ws` client; resolves once it is open, or with the HTTP answer that refused it. */
export function dial(url: string, options: { protocols?: string[]; headers?: Record<string, string>; ca?: string; servername?: string } = {}): Promise<Dialled> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options.protocols ?? [], { headers: options.headers, ...(options.ca ? { ca: options.ca, servername: options.servername } : {}) });
    ws.once('upgrade', (res: IncomingMessage) => {
      ws.once('open', () => resolve({ kind: 'open', ws, headers: res.headers }));
    });
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ kind: 'refused', status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() });
        ws.terminate();
      });
    });
    ws.once('error', reject);
  });
}

/** Sends a message and resolves with the next one received (and whether it was binary). */
export async function roundTrip(ws: WebSocket, data: string | Buffer): Promise<{ data: Buffer; binary: boolean }> {
  const reply = new Promise<{ data: Buffer; binary: boolean }>((resolve) => ws.once('message', (d: RawData, binary: boolean) => resolve({ data: d as Buffer, binary })));
  ws.send(data);
  return reply;
}

/** Resolves with the close code once the WebSocket is closed. */
export async function closed(ws: WebSocket): Promise<number> {
  if (ws.readyState === WebSocket.CLOSED) return 1006;
  const [code] = (await once(ws, 'close')) as [number];
  return code;
}
