// `<host>:<port>` of an upstream address, IPv6 in brackets: the name of an endpoint, of its
// connection pool and of the trace's backendCallStart target.
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
