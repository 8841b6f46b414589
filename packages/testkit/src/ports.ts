// An ephemeral loopback port that was free a moment ago. For servers that must be told a port
// before they start (a config file, a child process); servers we start ourselves listen on 0.
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

export async function freePort(host = '127.0.0.1'): Promise<number> {
  const s = createServer();
  s.unref();
  s.listen(0, host);
  await once(s, 'listening');
  const port = (s.address() as AddressInfo).port;
  s.close();
  await once(s, 'close');
  return port;
}
