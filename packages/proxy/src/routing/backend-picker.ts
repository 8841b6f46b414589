// Chooses where one request goes: a backend of the route by weight, then, for a Service, one
// of its ready endpoints round robin. Cumulative weights are computed once per config; a pick
// is one random number and a short scan (routes rarely have many backends).
import type { BackendIR, ServiceBackendIR } from '@tollgate/api';

/** The address a request is sent to, and the backend it belongs to. */
export interface UpstreamTarget {
  /** `<address>:<port>` of the endpoint; names its connection pool. */
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly backend: BackendIR;
}

/** null: no backend can take the request (none configured, none resolved, no ready endpoint). */
export type BackendPicker = () => UpstreamTarget | null;

type TargetPicker = () => UpstreamTarget | null;

export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The connection-pool names a backend can dial: what a reload must keep open. */
export function upstreamNames(backend: BackendIR): string[] {
  switch (backend.kind) {
    case 'static':
      return [backend.name];
    case 'service':
      return backend.endpoints.map((e) => hostPort(e.address, e.port));
    case 'invalid':
      return [];
  }
}

function serviceTargets(backend: ServiceBackendIR): TargetPicker {
  const targets = backend.endpoints.map((e) => ({ name: hostPort(e.address, e.port), host: e.address, port: e.port, backend }));
  if (!targets.length) return () => null;
  let next = 0;
  return () => {
    const t = targets[next]!;
    next = (next + 1) % targets.length;
    return t;
  };
}

function targetsOf(backend: BackendIR): TargetPicker {
  switch (backend.kind) {
    case 'static': {
      const only = { name: backend.name, host: backend.host, port: backend.port, backend };
      return () => only;
    }
    case 'service':
      return serviceTargets(backend);
    case 'invalid':
      return () => null;
  }
}

export function backendPicker(backends: readonly BackendIR[]): BackendPicker {
  const live = backends.filter((b) => b.weight > 0);
  if (!live.length) return () => null;
  const pickers = live.map(targetsOf);
  if (pickers.length === 1) return pickers[0]!;
  const cumulative: number[] = [];
  let total = 0;
  for (const b of live) cumulative.push((total += b.weight));
  return () => {
    const r = Math.random() * total;
    for (let i = 0; i < cumulative.length; i++) if (r < cumulative[i]!) return pickers[i]!();
    return pickers[pickers.length - 1]!();
  };
}
