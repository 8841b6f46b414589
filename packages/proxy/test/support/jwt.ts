// JWT test support: signing keys and their JWKs, tokens signed with jose (and forged by hand:
// alg none, HS256 over a public key), and a real HTTPS JWKS server with a CA made in the test,
// whose behaviour a test switches (serve a set, hang, answer garbage, stream 50 MB, fail).
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { SignJWT, type JWTPayload } from 'jose';
import { issueTestCertificate, type TestCertificate } from '@tollgate/testkit';

export interface SigningKey {
  readonly kid: string;
  readonly alg: 'RS256' | 'PS256' | 'ES256' | 'ES384' | 'EdDSA';
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The public JWK with kid (and use: sig). */
  readonly jwk: Record<string, string>;
}

export function signingKey(kid: string, alg: SigningKey['alg'] = 'RS256'): SigningKey {
  const pair =
    alg === 'RS256' || alg === 'PS256'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('ec', { namedCurve: alg === 'ES256' ? 'P-256' : 'P-384' });
  const jwk = { ...(pair.publicKey.export({ format: 'jwk' }) as Record<string, string>), kid, use: 'sig' };
  return { kid, alg, privateKey: pair.privateKey, publicKey: pair.publicKey, jwk };
}

export function jwks(...keys: SigningKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.jwk) });
}

/** A signed token; `header` overrides the protected header (kid, alg), `nowMs` is the proxy's clock. */
export async function sign(key: SigningKey, claims: JWTPayload, opts: { nowMs: number; header?: Record<string, unknown>; noExp?: boolean }): Promise<string> {
  const now = Math.floor(opts.nowMs / 1000);
  const body: JWTPayload = { iat: now, ...(opts.noExp ? {} : { exp: now + 3600 }), ...claims };
  return new SignJWT(body).setProtectedHeader({ alg: key.alg, kid: key.kid, ...opts.header }).sign(key.privateKey);
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** An unsigned token: `alg: none`, empty signature. */
export function unsigned(claims: JWTPayload, header: Record<string, unknown> = { alg: 'none' }): string {
  return `${b64(header)}.${b64(claims)}.`;
}

/** The key-confusion forgery: HS256 with the issuer's public key (PEM) as the HMAC secret. */
export async function hmacWithPublicKey(key: SigningKey, claims: JWTPayload, nowMs: number): Promise<string> {
  const pem = key.publicKey.export({ type: 'spki', format: 'pem' });
  const now = Math.floor(nowMs / 1000);
  return new SignJWT({ iat: now, exp: now + 3600, ...claims }).setProtectedHeader({ alg: 'HS256', kid: key.kid }).sign(new TextEncoder().encode(pem));
}

/** A token whose signed payload is `payload` as given (not necessarily JSON). */
export function signRaw(key: SigningKey, payload: string): string {
  const input = `${b64({ alg: 'RS256', kid: key.kid })}.${b64(payload)}`;
  const signature = createSign('RSA-SHA256').update(input).sign(key.privateKey).toString('base64url');
  return `${input}.${signature}`;
}

export type JwksBehaviour =
  | { readonly kind: 'serve'; readonly body: string }
  | { readonly kind: 'hang' }
  | { readonly kind: 'garbage' }
  | { readonly kind: 'status'; readonly status: number }
  /** Streams this many bytes of a JSON-looking body, as fast as the client reads. */
  | { readonly kind: 'huge'; readonly bytes: number };

export interface JwksServer {
  readonly ca: TestCertificate;
  readonly port: number;
  readonly address: string;
  /** Requests received so far. */
  readonly requests: number;
  /** Bytes of huge bodies written before the client went away. */
  readonly hugeBytesWritten: number;
  /** Emits `request` as each request arrives, `closed` as a huge body's client goes away. */
  readonly events: EventEmitter;
  behave(b: JwksBehaviour): void;
  close(): Promise<void>;
}

export async function startJwksServer(initial: JwksBehaviour): Promise<JwksServer> {
  const ca = issueTestCertificate({ commonName: 'Test JWKS CA', ca: true });
  const leaf = issueTestCertificate({ commonName: 'jwks.test', names: ['jwks.test', '127.0.0.1'], issuer: ca });
  let behaviour = initial;
  let requests = 0;
  let hugeBytesWritten = 0;
  const events = new EventEmitter();
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
    requests++;
    events.emit('request', req.url);
    const b = behaviour;
    if (b.kind === 'hang') return; // never answers; the socket is destroyed at close
    if (b.kind === 'status') return void res.writeHead(b.status, { 'content-type': 'text/plain' }).end('unavailable');
    if (b.kind === 'garbage') return void res.writeHead(200, { 'content-type': 'application/json' }).end('<html>this is not a key set</html>');
    if (b.kind === 'serve') return void res.writeHead(200, { 'content-type': 'application/json' }).end(b.body);
    // huge: no content-length, so the client finds out only by counting.
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(65_536, 0x20);
    res.write('{"keys":[');
    const pump = () => {
      while (hugeBytesWritten < b.bytes && !res.destroyed) {
        hugeBytesWritten += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end(']}');
    };
    res.on('close', () => events.emit('closed'));
    pump();
  });
  server.on('secureConnection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await EventEmitter.once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    ca,
    port,
    address: `127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    get hugeBytesWritten() {
      return hugeBytesWritten;
    },
    events,
    behave: (b) => (behaviour = b),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
