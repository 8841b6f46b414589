#!/usr/bin/env node
// What authentication costs on the LLM route: one Tollgate, one LLM route per variant (the
// peer bench's metered chat route, never-refusing limits), told apart by hostname: no auth,
// apiKey (1,000 consumers), jwt (RS256 with an inline key set), basicAuth (bcrypt; every
// request after the first is a cached verification) and oidc (a valid session cookie: the
// AES-256-GCM cookie opened and its RS256 ID token verified, cached, on every request; the
// provider's discovery document and key set served by a small HTTP server of the bench, read
// once at start). The variants take turns within each
// round, the proxy pinned to one CPU; the table gives medians and each variant's CPU per
// request against no auth: the median of its per-round ratios (a round's variants run back to back). Printed, not asserted.
//
//   pnpm build && node bench/auth.mjs [--rounds 5] [--duration 10] [--warmup 3]
import { createPrivateKey, createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from './lib/cases.mjs';
import { REQUESTS } from './lib/requests.mjs';
import { writeTollgateConfig } from './lib/configs.mjs';
import { benchOnMock, RATE_OPTION_HELP, ROUND_OPTIONS_HELP, runBench, variantOptions } from './lib/variants.mjs';
import { ensureWrk } from './peers/wrk.mjs';

const HELP = `Usage: node bench/auth.mjs [options]

Options:
${ROUND_OPTIONS_HELP}
${RATE_OPTION_HELP}
  --only <variants>  comma-separated: none, apiKey, jwt, basicAuth, oidc (none is always run)
  -h, --help
`;

const NEVER = 2_000_000_000;
const VARIANTS = ['none', 'apiKey', 'jwt', 'basicAuth', 'oidc'];
const TARGETS = { apiKey: 1.1, jwt: 1.15, basicAuth: 1.1, oidc: 1.2 };
const OIDC_KEY = randomBytes(32).toString('base64');

const b64url = (buf) => Buffer.from(buf).toString('base64url');

/** An RS256 token valid for a day and the key set that verifies it; `claims` added to the token's. */
function jwtMaterial(claims = {}) {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' };
  const now = Math.floor(Date.now() / 1000);
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'bench' }));
  const body = b64url(JSON.stringify({ iss: 'https://issuer.bench', aud: 'tollgate', sub: 'bench-user', iat: now, exp: now + 86_400, ...claims }));
  const sig = createSign('RSA-SHA256').update(`${head}.${body}`).sign(createPrivateKey(privateKey.export({ format: 'pem', type: 'pkcs8' })));
  return { token: `${head}.${body}.${b64url(sig)}`, jwks: JSON.stringify({ keys: [jwk] }) };
}

function hasHtpasswd() {
  try {
    execFileSync('htpasswd', ['-h'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // htpasswd -h prints its usage and exits 1; only a missing binary is ENOENT.
    return err.code !== 'ENOENT';
  }
}

/** A bcrypt htpasswd line: htpasswd when installed, else the proxy's own bcrypt library. */
function bcryptLine(user, password) {
  if (hasHtpasswd()) return execFileSync('htpasswd', ['-nbB', '-C', '10', user, password], { encoding: 'utf8' }).trim();
  const require = createRequire(join(ROOT, 'packages/proxy/package.json'));
  const bcrypt = require('bcryptjs');
  return `${user}:${bcrypt.hashSync(password, 10)}`;
}

/** The OpenID provider's discovery document and key set, served on loopback; resolves its issuer and address. */
async function startOidcProvider(jwks) {
  // `jwks()`: the key set, made once the issuer (this server's address) is known.
  const server = createServer((req, res) => {
    const issuer = `http://${req.headers.host}`;
    if (req.url === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/keys`, code_challenge_methods_supported: ['S256'] }));
    } else if (req.url === '/keys') res.writeHead(200, { 'content-type': 'application/json' }).end(jwks());
    else res.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const address = `127.0.0.1:${server.address().port}`;
  return { issuer: `http://${address}`, address };
}

/** A session cookie as the proxy seals it (auth/oidc-cookie.ts). */
async function oidcCookie(idToken) {
  const { CookieSealer } = await import(join(ROOT, 'packages/proxy/dist/auth/oidc-cookie.js'));
  return `tollgate-oidc=${new CookieSealer(OIDC_KEY).seal('tollgate-oidc', { i: idToken, r: null, e: Date.now() + 86_400_000 })}`;
}

function writeFiles(dir, mockLlmHost, port, adminPort, oidc) {
  const keys = Array.from({ length: 1000 }, (_, i) => ({ key: `sk-bench-${i}-${randomBytes(12).toString('hex')}`, consumer: `consumer-${i}`, group: `team-${i % 10}` }));
  writeFileSync(join(dir, 'keys.json'), JSON.stringify(keys));
  writeFileSync(join(dir, 'htpasswd'), `${bcryptLine('bench', 'bench-password')}\n`);
  const { token, jwks } = jwtMaterial();
  const limits = { rateLimit: { local: [{ requests: NEVER, unit: 'Seconds' }, { tokens: NEVER, unit: 'Seconds' }] } };
  const auth = {
    none: {},
    apiKey: { apiKey: { file: 'keys.json' } },
    jwt: { jwt: { providers: [{ name: 'bench', issuer: 'https://issuer.bench', audiences: ['tollgate'], jwks: { inline: jwks } }] } },
    basicAuth: { basicAuth: { htpasswd: { file: 'htpasswd' } } },
    oidc: { oidc: { issuer: oidc.issuer, provider: { host: oidc.address }, clientId: 'bench', sessionKey: { file: 'session-key' } } },
  };
  writeFileSync(join(dir, 'session-key'), `${OIDC_KEY}\n`);
  const routes = VARIANTS.map((v) => ({
    name: `chat-${v.toLowerCase()}`,
    hostnames: [`${v.toLowerCase()}.auth.bench`],
    matches: [{ path: { type: 'PathPrefix', value: '/v1/chat/completions' }, method: 'POST' }],
    backends: [{ host: mockLlmHost }],
    policies: { traffic: { ...limits, ...auth[v] } },
  }));
  const file = writeTollgateConfig(dir, 'auth', { port, adminPort, routes });
  const credentials = {
    none: {},
    apiKey: { authorization: `Bearer ${keys[500].key}` },
    jwt: { authorization: `Bearer ${token}` },
    basicAuth: { authorization: `Basic ${Buffer.from('bench:bench-password').toString('base64')}` },
    oidc: { cookie: oidc.cookie },
  };
  const requests = Object.fromEntries(
    VARIANTS.map((v) => [v, { ...REQUESTS.chat, headers: { ...REQUESTS.chat.headers, host: `${v.toLowerCase()}.auth.bench`, ...credentials[v] } }]),
  );
  return { file, requests };
}

async function main() {
  const opts = variantOptions(HELP, VARIANTS);
  ensureWrk();
  let session = null;
  const provider = await startOidcProvider(() => session.jwks);
  session = jwtMaterial({ iss: provider.issuer, aud: 'bench' });
  const oidc = { ...provider, cookie: await oidcCookie(session.token) };
  await benchOnMock({ name: 'auth', title: 'authentication cost on the LLM route', opts, targets: TARGETS, writeFiles: (dir, host, port, admin) => writeFiles(dir, host, port, admin, oidc) });
}

runBench('auth', main);
