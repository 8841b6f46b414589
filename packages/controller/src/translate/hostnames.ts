// Hostname intersection between a listener and a route (Gateway API): a route attaches to a
// listener only for the hostnames both accept; `*.example.com` covers any number of labels
// in front of `example.com`, never `example.com` itself.

/** True when `pattern` (exact or `*.` wildcard) accepts the exact or wildcard hostname `host`. */
function covers(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (!pattern.startsWith('*.')) return false;
  const suffix = pattern.slice(1); // ".example.com"
  const bare = host.startsWith('*.') ? host.slice(1) : host;
  return bare.endsWith(suffix) && bare.length > suffix.length;
}

/** The hostnames matched by both, or null when they share none. */
export function intersectHostname(route: string, listener: string | null): string | null {
  if (listener === null) return route;
  if (covers(listener, route)) return route;
  if (covers(route, listener)) return listener;
  return null;
}

/**
 * The hostnames a route serves on a listener: [] means every hostname of the listener (a route
 * without hostnames on a listener without one); null means none, so the route does not attach.
 */
export function routeHostnamesOn(listener: string | null, route: readonly string[]): string[] | null {
  if (!route.length) return listener === null ? [] : [listener];
  const out = new Set<string>();
  for (const h of route) {
    const x = intersectHostname(h.toLowerCase(), listener);
    if (x !== null) out.add(x);
  }
  return out.size ? [...out].sort() : null;
}
