// Ports for test servers. A server we start ourselves listens on port 0 and is asked which
// port it got. A server that must be told its port before it binds (a config file, a child
// process that cannot report the port it got) is started through `onFreePorts`: a probed port
// is only free until someone else binds it, and parallel suites bind ports all the time, so a
// start that loses that race is retried with fresh ports instead of failing the test.
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A loopback port nothing listened on a moment ago. Only for an address nothing should
 * answer on (a dead backend); a server that will bind it goes through `onFreePorts`.
 */
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

/** Codes of a bind that lost its port: Node's, and the Tollgate catalogs'. */
const IN_USE_CODES = new Set(['EADDRINUSE', 'TG_BIND_IN_USE', 'TG_ADMIN_BIND']);

/**
 * True when `err` (or an error it was caused by) says an address is already in use: a Node
 * error, a catalog error, or the words a child process printed before it exited.
 */
export function isPortInUse(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && IN_USE_CODES.has(code)) {
      // TG_ADMIN_BIND also covers addresses that cannot be bound at all.
      return code !== 'TG_ADMIN_BIND' || /already in use/.test(String((e as Error).message));
    }
    if (/EADDRINUSE|address already in use|is already in use/i.test(String((e as Error).message ?? e))) return true;
  }
  return false;
}

export interface OnFreePortsOptions {
  readonly host?: string;
  /** Starts tried before the last error is thrown (default 5). */
  readonly attempts?: number;
  /** Whether an error of `start` means a port was taken (default `isPortInUse`). */
  readonly inUse?: (err: unknown) => boolean;
}

/**
 * Runs `start` with `count` distinct free ports; when it fails because one of them was taken
 * in the meantime, runs it again with fresh ports. `start` must clean up after itself when
 * it throws (nothing half-started is left to the caller).
 */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>, options: OnFreePortsOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 5;
  const inUse = options.inUse ?? isPortInUse;
  for (let attempt = 1; ; attempt++) {
    const ports = new Set<number>();
    while (ports.size < count) ports.add(await freePort(options.host));
    try {
      return await start([...ports]);
    } catch (err) {
      if (attempt >= attempts || !inUse(err)) throw err;
    }
  }
}

/** `onFreePorts` for one port. */
export function onFreePort<T>(start: (port: number) => Promise<T>, options?: OnFreePortsOptions): Promise<T> {
  return onFreePorts(1, ([port]) => start(port!), options);
}
