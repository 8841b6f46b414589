// The stream's CA and serving certificates: what node:crypto's X509Certificate and OpenSSL's
// own verifier (through a real TLS handshake) say of what pki/ makes.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../src/pki/authority.js';
import { ipBytes, newKeyPair } from '../src/pki/certificates.js';

const NAMES = ['tollgate-controller.tollgate-system.svc', 'tollgate-controller.tollgate-system.svc.cluster.local'];

async function handshake(ca: string, serving: { certificate: string; privateKey: string }, servername: string): Promise<{ authorized: boolean; error: string | undefined }> {
  const server = createServer({ cert: serving.certificate, key: serving.privateKey }, (s) => s.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const socket = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, ca, servername, rejectUnauthorized: false });
    await once(socket, 'secureConnect');
    const r = { authorized: socket.authorized, error: socket.authorizationError?.toString() };
    socket.destroy();
    return r;
  } finally {
    server.close();
  }
}

describe('certificate authority', () => {
  it('makes a CA that signs serving certificates a TLS client accepts for the listed names only', async () => {
    const { ca } = CertificateAuthority.create();
    expect(ca.x509.ca).toBe(true);
    expect(ca.x509.subject).toContain('CN=tollgate-ca');
    const s = ca.issueServing(NAMES, ['127.0.0.1'], 30 * 86_400_000);
    const x = new X509Certificate(s.certificate);
    expect(x.ca).toBe(false);
    expect(x.checkIssued(ca.x509)).toBe(true);
    expect(x.verify(ca.x509.publicKey)).toBe(true);
    expect(x.subjectAltName).toBe(`DNS:${NAMES[0]}, DNS:${NAMES[1]}, IP Address:127.0.0.1`);
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(await handshake(ca.certificate, s, NAMES[0]!)).toEqual({ authorized: true, error: undefined });
    // Chain fine, name wrong: checked by the client's checkServerIdentity, not by the chain.
    expect(x.checkHost('other.tollgate-system.svc')).toBeUndefined();
    const other = CertificateAuthority.create().ca;
    const refused = await handshake(other.certificate, s, NAMES[0]!);
    expect(refused.authorized).toBe(false);
    expect(refused.error).toMatch(/signature|issuer/i);
  });

  it('loads what it stored, and never prints its key', () => {
    const { ca, privateKeyPem } = CertificateAuthority.create();
    const loaded = CertificateAuthority.load(ca.certificate, privateKeyPem);
    expect(loaded.x509.fingerprint256).toBe(ca.x509.fingerprint256);
    const shown = `${JSON.stringify(loaded)} ${inspect(loaded, { depth: 10 })}`;
    expect(shown).not.toContain('PRIVATE KEY');
    expect(shown).not.toContain(privateKeyPem.split('\n')[1]!);
    // A certificate issued by the loaded CA verifies with the original.
    expect(new X509Certificate(loaded.issueServing(['a.example'], [], 60_000).certificate).verify(ca.x509.publicKey)).toBe(true);
  });

  it('refuses a stored CA that cannot serve, saying why', () => {
    const { ca, privateKeyPem } = CertificateAuthority.create();
    const otherKey = newKeyPair().privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => CertificateAuthority.load('garbage', privateKeyPem)).toThrow(/ca.crt is not a PEM certificate/);
    expect(() => CertificateAuthority.load(ca.certificate, 'garbage')).toThrow(/^ca.key is not a PEM private key$/);
    expect(() => CertificateAuthority.load(ca.certificate, otherKey)).toThrow('ca.key is not the private key of ca.crt');
    const serving = ca.issueServing(['a.example'], [], 60_000);
    expect(() => CertificateAuthority.load(serving.certificate, serving.privateKey)).toThrow(/is not a CA certificate/);
    const short = CertificateAuthority.create(new Date(), 60_000);
    expect(() => CertificateAuthority.load(short.ca.certificate, short.privateKeyPem, new Date(Date.now() + 120_000))).toThrow(/ca.crt expired at/);
  });

  it('never issues past the CA and keeps the serving lifetime asked for', () => {
    const { ca } = CertificateAuthority.create(new Date(), 3_600_000);
    expect(ca.issueServing(['a.example'], [], 86_400_000).notAfter.getTime()).toBeLessThanOrEqual(ca.notAfter.getTime());
    const now = new Date();
    const s = CertificateAuthority.create().ca.issueServing(['a.example'], [], 600_000, now);
    // Certificate times have whole seconds.
    expect(Math.abs(s.notAfter.getTime() - (now.getTime() + 600_000))).toBeLessThan(1000);
  });

  it('encodes IP addresses for subjectAltName', () => {
    expect([...ipBytes('198.18.0.1')]).toEqual([198, 18, 0, 1]);
    expect(ipBytes('::1').toString('hex')).toBe('00000000000000000000000000000001');
    expect(ipBytes('fd00:1::2').toString('hex')).toBe('fd000001000000000000000000000002');
    expect(ipBytes('2001:db8:0:0:0:0:0:1').toString('hex')).toBe('20010db8000000000000000000000001');
  });
});
