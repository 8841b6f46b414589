// TLS binds on the snapshot stream: sent whole with the skeleton (no route parts), the keys of
// Terminate listeners revealed on the wire only, and the version covering them.
import { describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, encodeSnapshotParts, Secret, SnapshotDecoder, toWire, withVersion, type ProxySnapshot, type TlsBindIR } from '../src/index.js';

function snapshot(key: string): ProxySnapshot {
  const tlsBinds: TlsBindIR[] = [
    {
      port: 443,
      address: '0.0.0.0',
      listeners: [
        { name: 'pass', hostname: '*.example.com', tls: { mode: 'Passthrough' }, routes: [{ name: 'ns/a', origin: { kind: 'TLSRoute', namespace: 'ns', name: 'a' }, hostnames: ['a.example.com'], backends: [{ kind: 'service', name: 'a.ns.svc.cluster.local:8443', endpoints: [{ address: '198.18.0.1', port: 9443 }], weight: 1 }] }] },
        {
          name: 'term',
          hostname: 't.example.org',
          tls: { mode: 'Terminate', certificates: [{ origin: { kind: 'Secret', namespace: 'ns', name: 't' }, certificate: 'CERT', key: new Secret(key) }] },
          routes: [{ name: 'ns/t', origin: { kind: 'TLSRoute', namespace: 'ns', name: 't' }, hostnames: [], backends: [{ kind: 'invalid', name: 'ns/gone', weight: 1, reason: 'BackendNotFound' }] }],
        },
      ],
    },
  ];
  return withVersion({ source: { kind: 'controller', gateway: 'ns/gw' }, binds: [], tlsBinds });
}

describe('tlsBinds on the wire', () => {
  it('round-trips through the text and the parts encodings, the key a Secret again', () => {
    const s = snapshot('KEY-1');
    for (const decoded of [decodeSnapshot(encodeSnapshot(s)), new SnapshotDecoder().decodeParts(encodeSnapshotParts(s))]) {
      expect(toWire(decoded)).toEqual(toWire(s));
      const term = decoded.tlsBinds![0]!.listeners[1]!.tls;
      expect(term.mode === 'Terminate' && term.certificates[0]!.key).toBeInstanceOf(Secret);
    }
    // Nothing but the wire reveals the key.
    expect(JSON.stringify(s)).not.toContain('KEY-1');
  });

  it('a rotated key is a new version; a port bound twice is refused', () => {
    expect(snapshot('KEY-2').version).not.toBe(snapshot('KEY-1').version);
    const s = snapshot('KEY-1');
    const twice = withVersion({ ...s, binds: [{ port: 443, address: '0.0.0.0', listeners: [{ name: 'h', protocol: 'HTTP', hostname: null, policy: null, routes: [] }] }] });
    expect(() => decodeSnapshot(encodeSnapshot(twice))).toThrow(/port 443 is bound twice/);
  });
});
