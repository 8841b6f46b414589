// Shared by the servers: the bound address as text and a clear error when binding fails.
import type { Server } from 'node:net';
import { formatHostPort, type HostPort } from '../options.js';

export class BindError extends Error {
  override readonly name = 'BindError';
}

export function bindError(role: string, flag: string, addr: HostPort, err: unknown): BindError {
  const e = err as NodeJS.ErrnoException;
  const where = formatHostPort(addr);
  const why = e.code === 'EADDRINUSE' ? 'is already in use; stop the other process or choose another address' : e.code === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : `cannot be bound: ${e.message}`;
  return new BindError(`${role} address ${where} (${flag}) ${why}`, { cause: err });
}

export function listenAddress(server: Server): string {
  const a = server.address();
  if (typeof a === 'object' && a) return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  return String(a);
}
