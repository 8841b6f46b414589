// A TCP relay that holds every byte from its client for a fixed time before passing it on
// (answers pass at once): a service that is slow to hear from the gateway, so that what the
// gateway sends it after a response cannot land before a test reads the service's state,
// unless the gateway waited for it. Order is kept: every chunk waits the same time.
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

export interface SlowRelay {
  /** `127.0.0.1:<port>`: give this to the gateway in place of the target. */
  readonly address: string;
  close(): Promise<void>;
}

export async function slowRelay(target: string, delayMs: number): Promise<SlowRelay> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host, port });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk) => setTimeout(() => upstream.write(chunk), delayMs));
    client.on('end', () => setTimeout(() => upstream.end(), delayMs));
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
