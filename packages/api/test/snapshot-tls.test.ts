// HTTPS listeners in the snapshot: the private key travels only in the wire form, every other
// serialisation redacts it, a rotated key is a new version, and a bind mixing HTTP and HTTPS
// listeners is refused.
import { describe, expect, it } from 'vitest';
import { issueTestCertificate } from '@tollgate/testkit';
import { checkCertificate, decodeSnapshot, encodeSnapshot, fromWire, REDACTED, Secret, toWire, ValidationError, withVersion, type ListenerIR, type ProxySnapshot } from '../src/index.js';

const pair = issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'] });

function snapshot(key = pair.key, listeners?: ListenerIR[]): ProxySnapshot {
  return withVersion({
    source: { kind: 'controller', gateway: 'default/gw' },
    binds: [
      {
        port: 8443,
        address: '0.0.0.0',
        listeners: listeners ?? [
          {
            name: 'default/gw/https',
            protocol: 'HTTPS',
            hostname: 'a.example.com',
            tls: { mode: 'Terminate', certificates: [{ origin: { kind: 'Secret', namespace: 'default', name: 'a-tls' }, certificate: pair.cert, key: new Secret(key) }] },
            policy: null,
            routes: [],
          },
        ],
      },
    ],
  });
}

describe('HTTPS listeners on the wire', () => {
  it('carries the key in the wire form only', () => {
    const s = snapshot();
    expect(JSON.stringify(s)).not.toContain('PRIVATE KEY');
    expect(JSON.stringify(s)).toContain(REDACTED);
    const text = encodeSnapshot(s);
    expect(text).toContain('PRIVATE KEY');
    const back = decodeSnapshot(text);
    const l = back.binds[0]!.listeners[0]!;
    if (l.protocol !== 'HTTPS') throw new Error('expected HTTPS');
    expect(l.tls.certificates[0]!.key).toBeInstanceOf(Secret);
    expect(l.tls.certificates[0]!.key.reveal()).toBe(pair.key);
    expect(back.version).toBe(s.version);
  });

  it('gives a rotated key a new version', () => {
    const other = issueTestCertificate({ commonName: 'a.example.com' });
    expect(snapshot(other.key).version).not.toBe(snapshot().version);
  });

  it('refuses a bind mixing HTTP and HTTPS listeners, and an HTTPS listener without certificates', () => {
    const wire = toWire(snapshot()) as unknown as { binds: { listeners: Record<string, unknown>[] }[] };
    wire.binds[0]!.listeners.push({ name: 'plain', protocol: 'HTTP', hostname: 'b.example.com', policy: null, routes: [] });
    expect(() => fromWire(wire)).toThrow(/binds\[0\]\.listeners\[1\]\.protocol: got HTTP; every listener on port 8443 must be HTTPS/);
    const empty = toWire(snapshot()) as unknown as { binds: { listeners: { tls: { certificates: unknown[] } }[] }[] };
    empty.binds[0]!.listeners[0]!.tls.certificates = [];
    expect(() => fromWire(empty)).toThrow(ValidationError);
  });
});

describe('client validation of an HTTPS listener on the wire', () => {
  const ca = issueTestCertificate({ commonName: 'clients-ca', ca: true });
  const otherCa = issueTestCertificate({ commonName: 'other-ca', ca: true });
  function validating(caCertificates: string, mode: 'AllowValidOnly' | 'AllowInsecureFallback' = 'AllowValidOnly'): ProxySnapshot {
    const base = snapshot().binds[0]!.listeners[0]!;
    if (base.protocol !== 'HTTPS') throw new Error('expected HTTPS');
    return snapshot(pair.key, [{ ...base, tls: { ...base.tls, clientValidation: { caCertificates, mode, origins: ['ConfigMap default/clients-ca'] } } }]);
  }

  it('travels as it is, and its CAs and mode are part of the version; without it the version is what it was', () => {
    const s = validating(ca.cert);
    const back = decodeSnapshot(encodeSnapshot(s));
    const l = back.binds[0]!.listeners[0]!;
    if (l.protocol !== 'HTTPS') throw new Error('expected HTTPS');
    expect(l.tls.clientValidation).toEqual({ caCertificates: ca.cert, mode: 'AllowValidOnly', origins: ['ConfigMap default/clients-ca'] });
    expect(back.version).toBe(s.version);
    const versions = new Set([snapshot().version, s.version, validating(otherCa.cert).version, validating(ca.cert, 'AllowInsecureFallback').version]);
    expect(versions.size).toBe(4);
    const plain = decodeSnapshot(encodeSnapshot(snapshot())).binds[0]!.listeners[0]!;
    expect(plain.protocol === 'HTTPS' && 'clientValidation' in plain.tls).toBe(false);
  });

  it('refuses an unknown mode, no origin and a bundle over 1 MiB', () => {
    const wire = () => toWire(validating(ca.cert)) as unknown as { binds: { listeners: { tls: { clientValidation: Record<string, unknown> } }[] }[] };
    const edit = (f: (v: Record<string, unknown>) => void) => {
      const w = wire();
      f(w.binds[0]!.listeners[0]!.tls.clientValidation);
      return () => fromWire(w);
    };
    expect(edit((v) => (v.mode = 'Sometimes'))).toThrow(/binds\[0\]\.listeners\[0\]\.tls\.clientValidation\.mode/);
    expect(edit((v) => (v.origins = []))).toThrow(/clientValidation\.origins/);
    expect(edit((v) => (v.caCertificates = 'x'.repeat(1_048_577)))).toThrow(/clientValidation\.caCertificates/);
  });
});

describe('checkCertificate', () => {
  it('accepts a matching pair and says what is wrong otherwise, never quoting the key', () => {
    const ok = checkCertificate(pair.cert, pair.key);
    expect(ok.ok && ok.info).toMatchObject({ subject: 'CN=a.example.com', sans: ['a.example.com'], chainLength: 1 });
    const other = issueTestCertificate({ commonName: 'b.example.com' });
    const mismatch = checkCertificate(pair.cert, other.key);
    expect(mismatch).toEqual({ ok: false, field: 'key', problem: 'does not belong to the certificate (subject CN=a.example.com); give the key the certificate was issued for' });
    expect(checkCertificate('nonsense', pair.key)).toMatchObject({ ok: false, field: 'certificate' });
    expect(checkCertificate(pair.cert, 'nonsense')).toMatchObject({ ok: false, field: 'key' });
    const broken = checkCertificate(pair.cert, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n');
    expect(broken.ok).toBe(false);
    expect(JSON.stringify(broken)).not.toContain('AAAA');
  });
});

describe('TLS to a backend on the wire', () => {
  const client = issueTestCertificate({ commonName: 'tollgate-proxy' });
  function withBackendTls(): ProxySnapshot {
    const tls = {
      caCertificates: pair.cert,
      hostname: 'llm.internal',
      subjectAltNames: [{ type: 'URI' as const, uri: 'spiffe://cluster.local/ns/ai/sa/vllm' }],
      clientCertificate: { origin: { kind: 'Secret' as const, namespace: 'default', name: 'proxy-client' }, certificate: client.cert, key: new Secret(client.key) },
      minVersion: 'TLSv1.3' as const,
    };
    const route = {
      name: 'default/r/rule/0',
      origin: { kind: 'HTTPRoute' as const, namespace: 'default', name: 'r', rule: 0 },
      hostnames: [],
      matches: [{ path: { type: 'PathPrefix' as const, value: '/' }, method: null, headers: [], queryParams: [] }],
      filters: [],
      policy: null,
      backends: [{ kind: 'service' as const, name: 'vllm.ai.svc.cluster.local:8443', namespace: 'ai', service: 'vllm', port: 8443, weight: 1, tls }],
      timeouts: { requestMs: null, backendRequestMs: null },
    };
    return withVersion({
      source: { kind: 'controller', gateway: 'default/gw' },
      binds: [{ port: 80, address: '0.0.0.0', listeners: [{ name: 'default/gw/http', protocol: 'HTTP', hostname: null, policy: null, routes: [route] }] }],
      endpoints: [{ name: 'vllm.ai.svc.cluster.local:8443', endpoints: [{ address: '198.18.0.1', port: 8443 }] }],
    });
  }

  it('carries the client key in the wire form only, and back as a Secret', () => {
    const s = withBackendTls();
    expect(JSON.stringify(s)).not.toContain('PRIVATE KEY');
    const text = encodeSnapshot(s);
    expect(text).toContain('PRIVATE KEY');
    const back = decodeSnapshot(text);
    const b = back.binds[0]!.listeners[0]!.routes[0]!.backends[0]!;
    if (b.kind !== 'service' || !b.tls?.clientCertificate) throw new Error('expected a service backend with a client certificate');
    expect(b.tls.clientCertificate.key).toBeInstanceOf(Secret);
    expect(b.tls.clientCertificate.key.reveal()).toBe(client.key);
    expect(JSON.stringify(back)).not.toContain('PRIVATE KEY');
    expect(back.version).toBe(s.version);
  });
});
