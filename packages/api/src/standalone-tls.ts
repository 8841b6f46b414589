// The TLS binds of a standalone config (config `tlsBinds`): their checks beyond the schema and
// their IR. Listener names share one namespace with the HTTP listeners, ports with the HTTP binds.
import type { CertificateIR, TlsBindIR, TlsListenerIR } from './snapshot.js';
import type { TlsBindConfig } from './schema/tls-bind-config.js';
import { requireHostPort } from './host-port.js';
import { checkUnique } from './rules.js';
import type { Problem } from './validation-error.js';

/** Checks `tlsBinds` against each other and against the ports and listener names of `binds`. */
export function checkTlsBinds(tlsBinds: readonly TlsBindConfig[], httpPorts: readonly number[], httpListeners: readonly string[], out: Problem[]): void {
  const taken = new Set(httpPorts);
  tlsBinds.forEach((b, bi) => {
    if (taken.has(b.port)) out.push({ path: `tlsBinds[${bi}].port`, message: `port ${b.port} is already bound (binds or an earlier tlsBinds entry); one bind per port` });
    taken.add(b.port);
    checkUnique(b.listeners, (l) => l.hostname ?? '*', (li) => `tlsBinds[${bi}].listeners[${li}].hostname`, 'listener hostname on one port', out);
    b.listeners.forEach((l, li) => checkUnique(l.routes, (r) => r.name, (ri) => `tlsBinds[${bi}].listeners[${li}].routes[${ri}].name`, 'route name', out));
  });
  const names = [...httpListeners.map((name) => ({ name, path: null })), ...tlsBinds.flatMap((b, bi) => b.listeners.map((l, li) => ({ name: l.name, path: `tlsBinds[${bi}].listeners[${li}].name` })))];
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n.name) && n.path) out.push({ path: n.path, message: `listener name ${JSON.stringify(n.name)} is used twice; give each listener its own name` });
    seen.add(n.name);
  }
}

/** JSON paths and files of the certificates of Terminate listeners. */
export function tlsCertificateEntries(tlsBinds: readonly TlsBindConfig[]): { path: string; certFile: string; keyFile: string }[] {
  return tlsBinds.flatMap((b, bi) =>
    b.listeners.flatMap((l, li) => (l.tls.mode === 'Terminate' ? l.tls.certificates.map((c, ci) => ({ path: `tlsBinds[${bi}].listeners[${li}].tls.certificates[${ci}]`, ...c })) : [])),
  );
}

export function toTlsBinds(tlsBinds: readonly TlsBindConfig[], certificateAt: (path: string) => CertificateIR): TlsBindIR[] {
  return tlsBinds.map((b, bi) => ({
    port: b.port,
    address: b.address ?? '0.0.0.0',
    listeners: b.listeners.map((l, li): TlsListenerIR => {
      const path = `tlsBinds[${bi}].listeners[${li}]`;
      const tls: TlsListenerIR['tls'] = l.tls.mode === 'Passthrough' ? { mode: 'Passthrough' } : { mode: 'Terminate', certificates: l.tls.certificates.map((_, ci) => certificateAt(`${path}.tls.certificates[${ci}]`)) };
      return {
        name: l.name,
        hostname: l.hostname?.toLowerCase() ?? null,
        tls,
        routes: l.routes.map((r, ri) => ({
          name: `${l.name}/${r.name}`,
          origin: { kind: 'config', path: `${path}.routes[${ri}]` },
          hostnames: (r.hostnames ?? []).map((h) => h.toLowerCase()),
          backends: r.backends.map((x) => {
            const { host, port } = requireHostPort(x.host, 'backends[].host');
            return { kind: 'static', name: x.host, host, port, weight: x.weight ?? 1 };
          }),
        })),
      };
    }),
  }));
}
