// An address to listen on, as the flags give it (options.ts parses them): here so that what
// listens (runtime/, the servers) needs nothing of the flag parser.
export interface HostPort {
  /** '' means every interface (the `:9092` form). */
  readonly host: string;
  readonly port: number;
}

export function formatHostPort(a: HostPort): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
