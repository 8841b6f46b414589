// --local: the admin server is at --admin-addr (127.0.0.1:15000 by default) and listeners are
// on 127.0.0.1.
import { formatHostPort, parseHostPort } from '@tollgate/api/host-port';
import { describe, GwctlError, usage } from '../errors.js';
import { DEFAULT_TIMEOUT_MS, streamIdleMs, type Target } from './target.js';

/** Parses `host:port` (IPv6 in brackets); the host defaults to 127.0.0.1 for `:port`. */
export function parseAddr(addr: string, flag: string): { host: string; port: number } {
  const r = parseHostPort(addr, { defaultHost: '127.0.0.1' });
  if (!r.ok) throw usage(`${flag} must be <host>:<port>, got '${addr}': ${r.problem}`);
  return r.value;
}

export function localTarget(adminAddr: string, flag = '--admin-addr', timeoutMs = DEFAULT_TIMEOUT_MS): Target {
  const { host, port } = parseAddr(adminAddr, flag);
  const hostPort = formatHostPort({ host, port });
  return {
    description: hostPort,
    adminUrl: `http://${hostPort}`,
    timeoutMs,
    streamIdleMs: streamIdleMs(timeoutMs),
    listener: async (p) => `127.0.0.1:${p}`,
    unreachable: (err, what) =>
      what.kind === 'admin'
        ? new GwctlError('TG_GWCTL_ADMIN_UNREACHABLE', `cannot reach the admin server at ${hostPort}: ${describe(err)} (is it running? ${flag} sets the address)`, { cause: err })
        : new GwctlError('TG_GWCTL_REQUEST_FAILED', `request to 127.0.0.1:${what.port} failed: ${describe(err)} (is a listener on --port ${what.port}?)`, { cause: err }),
    close: async () => undefined,
  };
}
