// Ports the proxy binds for itself in every pod: a listener cannot use them. Translation
// refuses such a listener (PortUnavailable) and the deployer gives it no Service port.
export const READINESS_PORT = 15021;

export const PROXY_RESERVED_PORTS: ReadonlyMap<number, string> = new Map([
  [15000, 'admin'],
  [15020, 'metrics'],
  [READINESS_PORT, 'readiness'],
]);
