// Hostname semantics of the Gateway API. A hostname is either precise ("api.example.com") or a
// wildcard ("*.example.com") that matches any host with at least one more label in front
// ("a.example.com", "a.b.example.com"), never "example.com" itself.

export function isWildcard(h: string): boolean {
  return h.startsWith('*.');
}

/** The suffix a wildcard matches, with its leading dot: "*.example.com" -> ".example.com". */
export function wildcardSuffix(h: string): string {
  return h.slice(1);
}

/** Whether a request host (lower case, no port) is served by a hostname. */
export function hostMatches(pattern: string, host: string): boolean {
  if (!isWildcard(pattern)) return pattern === host;
  const suffix = wildcardSuffix(pattern);
  return host.length > suffix.length && host.endsWith(suffix);
}

/**
 * The hostname both a listener and a route accept, or null when they share none.
 * null listener hostname means "any host". Two wildcards intersect to the more specific one.
 */
export function intersectHostname(listener: string | null, route: string): string | null {
  if (listener === null) return route;
  if (!isWildcard(listener) && !isWildcard(route)) return listener === route ? route : null;
  if (isWildcard(listener) && !isWildcard(route)) return hostMatches(listener, route) ? route : null;
  if (!isWildcard(listener) && isWildcard(route)) return hostMatches(route, listener) ? listener : null;
  // Both wildcards: the longer one is within the shorter one, or they are disjoint.
  const [longer, shorter] = listener.length >= route.length ? [listener, route] : [route, listener];
  return longer === shorter || longer.endsWith(wildcardSuffix(shorter)) ? longer : null;
}

/**
 * Effective hostnames of a route on a listener: the intersections of each route hostname with
 * the listener's. A route without hostnames takes the listener's (null: any host). An empty
 * result means the route does not attach to this listener.
 */
export function effectiveHostnames(listener: string | null, routeHostnames: readonly string[]): (string | null)[] {
  if (!routeHostnames.length) return [listener];
  const out = new Set<string>();
  for (const h of routeHostnames) {
    const i = intersectHostname(listener, h);
    if (i !== null) out.add(i);
  }
  return [...out];
}

/** Normalises a Host header: lower case, port and trailing dot removed, IPv6 brackets kept. */
export function normalizeHost(raw: string | undefined): string {
  if (!raw) return '';
  let host = raw.toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end > 0 ? host.slice(0, end + 1) : host;
  }
  const colon = host.indexOf(':');
  if (colon >= 0) host = host.slice(0, colon);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}
