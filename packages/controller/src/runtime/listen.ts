// Shared by the servers: the bound address as text and a clear error when binding fails.
import type { Server } from 'node:net';
import type { CatalogError } from '@tollgate/api';
import { CONTROLLER_ERRORS } from '../errors.js';
import { formatHostPort, type HostPort } from './host-port.js';

export function bindError(role: string, flag: string, addr: HostPort, err: unknown): CatalogError {
  const e = err as NodeJS.ErrnoException;
  const problem = e.code === 'EADDRINUSE' ? 'is already in use' : e.code === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : `cannot be bound: ${e.message}`;
  return CONTROLLER_ERRORS.bind.create({ role, address: formatHostPort(addr), flag, problem }, { cause: err });
}

export function listenAddress(server: Server): string {
  const a = server.address();
  if (typeof a === 'object' && a) return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  return String(a);
}
