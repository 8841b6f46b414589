// The routing of a TLS bind: the listener whose hostname the server name matches (exact before
// the longest wildcard before none, as for HTTP), then the first route in precedence order with
// the most specific matching hostname, then a backend by weight.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { StreamBackendIR, TlsBindIR, TlsListenerIR, TlsRouteIR } from '@tollgate/api';
import { hostMatches, isWildcard } from '../routing/hostname.js';

export interface TlsTarget {
  readonly listener: TlsListenerIR;
  readonly route: TlsRouteIR;
  /** Terminate: the handshake's certificates; null: passthrough. */
  readonly secureContext: SecureContext | null;
}

/** Where a connection goes: an address, or why it is closed. */
export type StreamDestination = { readonly host: string; readonly port: number; readonly backend: string } | { readonly closed: string };

/** How specific a matching hostname is: exact beats wildcard, a longer wildcard beats a shorter, none is last. */
function specificity(pattern: string | null, name: string | null): number {
  if (pattern === null) return 0;
  if (name === null) return -1;
  if (!isWildcard(pattern)) return pattern === name ? 1_000 : -1;
  return hostMatches(pattern, name) ? pattern.length : -1;
}

function best<T>(items: readonly T[], hostnamesOf: (t: T) => readonly (string | null)[], name: string | null): T | null {
  let found: T | null = null;
  let score = -1;
  for (const item of items) {
    for (const h of hostnamesOf(item)) {
      const s = specificity(h, name);
      // Strictly greater: the first in order wins a tie (precedence order).
      if (s > score) {
        score = s;
        found = item;
      }
    }
  }
  return found;
}

export class TlsTable {
  readonly #contexts = new Map<TlsListenerIR, SecureContext>();
  /** Round-robin cursors of Service backends, by backend name. */
  readonly #cursors = new Map<string, number>();

  /** Builds the certificates of terminating listeners: a key node:tls refuses throws here, before any port changes. */
  constructor(readonly bind: TlsBindIR) {
    for (const l of bind.listeners) {
      if (l.tls.mode !== 'Terminate') continue;
      this.#contexts.set(l, createSecureContext({ cert: l.tls.certificates.map((c) => c.certificate), key: l.tls.certificates.map((c) => c.key.reveal()) }));
    }
  }

  /** The listener and route for a server name (null: the ClientHello named none). */
  target(serverName: string | null): TlsTarget | null {
    const listener = best(this.bind.listeners, (l) => [l.hostname], serverName);
    if (!listener) return null;
    const route = best(listener.routes, (r) => (r.hostnames.length ? r.hostnames : [null]), serverName);
    return route ? { listener, route, secureContext: this.#contexts.get(listener) ?? null } : null;
  }

  /** A backend of the route by weight, then an endpoint of it; `random` in [0, 1). */
  destination(route: TlsRouteIR, random: number): StreamDestination {
    const total = route.backends.reduce((n, b) => n + b.weight, 0);
    if (total === 0) return { closed: 'no_backend' };
    let at = random * total;
    const backend = route.backends.find((b) => (at -= b.weight) < 0) ?? route.backends[route.backends.length - 1]!;
    return this.#endpoint(backend);
  }

  #endpoint(b: StreamBackendIR): StreamDestination {
    if (b.kind === 'invalid') return { closed: 'invalid_backend' };
    if (b.kind === 'static') return { host: b.host, port: b.port, backend: b.name };
    if (!b.endpoints.length) return { closed: 'no_endpoint' };
    const i = (this.#cursors.get(b.name) ?? 0) % b.endpoints.length;
    this.#cursors.set(b.name, i + 1);
    const e = b.endpoints[i]!;
    return { host: e.address, port: e.port, backend: b.name };
  }
}
