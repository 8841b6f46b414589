// The controller side of a secured snapshot stream for the proxy's tests: a CA and a serving
// certificate for 127.0.0.1 made by the controller's own pki code, the CA and a token written
// to files as the pod's volumes hold them, and an authenticator that accepts that token for
// one Gateway (the TokenReview path is tested against a real API server in e2e/).
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CertificateAuthority, ServingCertificates, type AuthDecision, type StreamAuthenticator, type StreamSecurity } from '@tollgate/controller';
import pino from 'pino';
import type { ControllerSecurity } from '../../src/source/controller-source.js';

export interface StreamTls {
  readonly server: StreamSecurity;
  readonly proxy: ControllerSecurity & { kind: 'tls' };
  readonly ca: CertificateAuthority;
  readonly serving: ServingCertificates;
  readonly dir: string;
  /** Tokens and Gateways the authenticator was asked about, in order. */
  readonly checks: { token: string | undefined; gateway: string }[];
  close(): void;
}

/** `tokens`: what the authenticator accepts; the first is written to the token file. */
export function streamTls(gateway: string, tokens: string | readonly string[] = 'token-of-the-proxy'): StreamTls {
  const accepted = typeof tokens === 'string' ? [tokens] : tokens;
  const token = accepted[0]!;
  const { ca } = CertificateAuthority.create();
  const serving = new ServingCertificates(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }, pino({ level: 'silent' }));
  const dir = mkdtempSync(join(tmpdir(), 'tg-stream-tls-'));
  writeFileSync(join(dir, 'ca.crt'), ca.certificate);
  writeFileSync(join(dir, 'token'), `${token}\n`);
  const checks: { token: string | undefined; gateway: string }[] = [];
  const auth: StreamAuthenticator = {
    check: async (t, g): Promise<AuthDecision> => {
      checks.push({ token: t, gateway: g });
      if (t === undefined || !accepted.includes(t)) return { ok: false, code: grpc.status.UNAUTHENTICATED, result: 'unauthenticated', message: 'unknown token' };
      if (g !== gateway) return { ok: false, code: grpc.status.PERMISSION_DENIED, result: 'permission_denied', message: `not the proxy of ${g}` };
      return { ok: true, serviceAccount: { namespace: gateway.split('/')[0]!, name: 'proxy' } };
    },
  };
  return {
    server: { kind: 'tls', credentials: () => serving.serverCredentials(), auth },
    proxy: { kind: 'tls', caFile: join(dir, 'ca.crt'), tokenFile: join(dir, 'token') },
    ca,
    serving,
    dir,
    checks,
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
