// The appProtocol of a Service port (GEP-1911, Kubernetes standard application protocols,
// KEP-3726) to how the proxies speak to its endpoints. `kubernetes.io/h2c` is HTTP/2 over
// cleartext with prior knowledge; `kubernetes.io/ws` is HTTP/1.1, over which WebSocket
// upgrades pass (as they do to a port with no appProtocol: GEP-1911 says its absence disables
// nothing); `kubernetes.io/wss` is the same over TLS, so it needs a BackendTLSPolicy on the
// port. Another `kubernetes.io/` name is a protocol the proxies cannot speak: the reference is
// refused (ResolvedRefs False, UnsupportedProtocol) rather than sent something the backend
// does not expect. Any other value (an IANA name such as `http`, a vendor's `example.com/x`)
// says nothing the proxies act on, as Service ports in the wild carry all kinds: HTTP/1.1.
import type { V1EndpointSlice, V1ServicePort } from '@kubernetes/client-node';
import type { BackendProtocolIR } from '@tollgate/api';

const H2C = 'kubernetes.io/h2c';
const WS = 'kubernetes.io/ws';
const WSS = 'kubernetes.io/wss';
const STANDARD_PREFIX = 'kubernetes.io/';

export type AppProtocolSource = { readonly ok: true; readonly value: string | undefined } | { readonly ok: false; readonly message: string };

/**
 * The port's appProtocol: the Service port's own; without one, that of the EndpointSlice ports
 * serving it (a Service without a selector whose slices are written by hand may carry it only
 * there), which must then agree.
 */
export function appProtocolOf(port: V1ServicePort, slices: readonly V1EndpointSlice[]): AppProtocolSource {
  if (port.appProtocol) return { ok: true, value: port.appProtocol };
  const seen = new Set<string>();
  for (const slice of slices) {
    const sp = (slice.ports ?? []).find((p) => (p.name ?? '') === (port.name ?? ''));
    if (sp?.appProtocol) seen.add(sp.appProtocol);
  }
  if (seen.size > 1) {
    return { ok: false, message: `its EndpointSlices disagree on appProtocol (${[...seen].sort().join(', ')}); set appProtocol on the Service port, or make the slices agree` };
  }
  return { ok: true, value: seen.values().next().value };
}

export type BackendProtocolVerdict = { readonly ok: true; readonly protocol: BackendProtocolIR | null } | { readonly ok: false; readonly message: string };

/**
 * How the proxies speak to a port of this appProtocol; `tls`: a BackendTLSPolicy gives the port
 * TLS. `grpc`: a GRPCRoute's backend, which speaks HTTP/2 whatever the appProtocol allows
 * (absent, or one that names no transport): h2 over TLS when a BackendTLSPolicy covers the port,
 * h2c otherwise (grpcProtocol).
 */
export function backendProtocol(source: AppProtocolSource, tls: boolean, grpc = false): BackendProtocolVerdict {
  const verdict = httpProtocol(source, tls);
  return grpc && verdict.ok && verdict.protocol === null ? { ok: true, protocol: grpcProtocol(tls) } : verdict;
}

/** The HTTP/2 a GRPCRoute's backend is spoken: over TLS (ALPN h2) with a BackendTLSPolicy, h2c without. */
export function grpcProtocol(tls: boolean): BackendProtocolIR {
  return tls ? 'h2' : 'h2c';
}

function httpProtocol(source: AppProtocolSource, tls: boolean): BackendProtocolVerdict {
  if (!source.ok) return source;
  const value = source.value;
  if (value === undefined || value === '') return { ok: true, protocol: null };
  switch (value) {
    case H2C:
      return tls
        ? { ok: false, message: `appProtocol ${H2C} is HTTP/2 over cleartext, but a BackendTLSPolicy gives the port TLS; remove the policy, or the appProtocol (HTTP/1.1 over TLS for an HTTPRoute, HTTP/2 over TLS for a GRPCRoute)` }
        : { ok: true, protocol: 'h2c' };
    case WS:
      return { ok: true, protocol: null };
    case WSS:
      return tls ? { ok: true, protocol: null } : { ok: false, message: `appProtocol ${WSS} is WebSocket over TLS and needs a BackendTLSPolicy targeting the port; add one, or use ${WS}` };
    default:
      return value.startsWith(STANDARD_PREFIX)
        ? { ok: false, message: `appProtocol ${value} is not a protocol Tollgate speaks to backends (${H2C}, ${WS} and ${WSS} are); change it or leave it out for HTTP/1.1` }
        : { ok: true, protocol: null };
  }
}
