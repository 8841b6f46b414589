// Snapshots for the stream's tests: one Gateway, one route per name, and a route set changed
// while the route objects kept stay the same (what deltas are made of).
import { standaloneToSnapshot, validateStandaloneConfig, withVersion, type ProxySnapshot, type RouteIR, type SnapshotParts } from '@tollgate/api';
import type { SnapshotPush } from '@tollgate/api/snapshot-stream';

export const GATEWAY = 'edge/public';

/** A valid snapshot of GATEWAY whose one route is named `route`. */
export function snapshot(route: string): ProxySnapshot {
  const config = { binds: [{ port: 18080, listeners: [{ name: 'main', protocol: 'HTTP', routes: [{ name: route, backends: [{ host: '127.0.0.1:1' }] }] }] }] };
  return standaloneToSnapshot(validateStandaloneConfig(config, 'test'), { kind: 'controller', gateway: GATEWAY });
}

/** `base` with its routes replaced by `routes` (route objects of `base` kept as they are). */
export function withRoutes(base: ProxySnapshot, routes: readonly RouteIR[]): ProxySnapshot {
  const l = base.binds[0]!.listeners[0]!;
  return withVersion({ source: base.source, binds: [{ ...base.binds[0]!, listeners: [{ ...l, routes: [...routes] }] }] });
}
export const routesOf = (s: ProxySnapshot) => s.binds[0]!.listeners[0]!.routes;

/** A push as the decoder takes it. */
export function partsOf(p: Pick<SnapshotPush, 'snapshot' | 'routes' | 'routeCounts' | 'baseVersion' | 'routeRefs'>): SnapshotParts {
  return {
    skeleton: p.snapshot.toString('utf8'),
    routes: p.routes.map((r) => r.toString('utf8')),
    routeCounts: p.routeCounts,
    ...(p.baseVersion ? { base: { version: p.baseVersion, refs: p.routeRefs } } : {}),
  };
}
