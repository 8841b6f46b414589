// The libraries only some features need (gRPC and protobuf, jose, undici) are loaded by the
// compile of the first config that uses them (src/feature-module.ts). Checked in fresh proxy
// processes in which those libraries cannot be loaded at all (a module hook refuses them): a
// config that uses none of them starts and serves, so nothing imports them at start-up; a
// config that uses one is refused at load with TG_MODULE_UNAVAILABLE naming the package,
// never at its first request.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreePort, send, simpleConfig, startUpstream, type Upstream } from './helpers.js';
import { spawnProxy, type SpawnedProxy } from './spawned-proxy.js';

const REFUSED = ['@grpc/grpc-js', 'protobufjs', 'jose', 'undici'];
const HOOKS = `
import { registerHooks } from 'node:module';
const refused = new Set(${JSON.stringify(REFUSED)});
registerHooks({
  resolve(specifier, context, next) {
    if (refused.has(specifier)) throw new Error('refused by the test: ' + specifier);
    return next(specifier, context);
  },
});
`;

let dir: string;
let hooks: string;
let upstream: Upstream;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-feature-modules-'));
  hooks = join(dir, 'refuse.mjs');
  await writeFile(hooks, HOOKS);
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

function route(traffic: Record<string, unknown> | null): Record<string, unknown> {
  return { name: 'api', matches: [{ path: { type: 'PathPrefix', value: '/' } }], ...(traffic ? { policies: { traffic } } : {}), backends: [{ host: upstream.host }] };
}

/** Starts the proxy without the refused libraries; resolves when it listens or exits. */
async function start(port: number, traffic: Record<string, unknown> | null): Promise<SpawnedProxy & { port: number }> {
  const file = join(dir, `config-${port}.json`);
  await writeFile(file, JSON.stringify(simpleConfig(port, [route(traffic)])));
  return { ...(await spawnProxy(file, ['--import', hooks])), port };
}

describe('libraries of optional features', () => {
  it('a config that uses none of them starts and serves without them', async () => {
    const p = await onFreePort((port) => start(port, null));
    try {
      expect(p.outcome, p.output()).toBe('listening');
      const r = await send(`http://127.0.0.1:${p.port}/x`);
      expect(r.status).toBe(200);
    } finally {
      await p.stop();
    }
  });

  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' };
  const cases: [string, string, Record<string, unknown>][] = [
    ['a jwt policy', 'jose', { jwt: { providers: [{ name: 'corp', issuer: 'https://issuer.test', jwks: { inline: JSON.stringify({ keys: [jwk] }) } }] } }],
    ['a jwt policy with remote keys', 'undici', { jwt: { providers: [{ name: 'corp', issuer: 'https://issuer.test', jwks: { remote: { host: '127.0.0.1:1', path: '/jwks' } } }] } }],
    [
      'a global rate limit',
      'protobufjs',
      { rateLimit: { global: { service: { host: '127.0.0.1:1' }, domain: 'd', failureMode: 'FailOpen', timeout: '1s', descriptors: [{ unit: 'Requests', entries: [{ name: 'e', expression: 'request.path' }] }] } } },
    ],
    ['an extProc processor', 'protobufjs', { extProc: { service: { host: '127.0.0.1:1' }, messageTimeout: '1s' } }],
    ['an ext_authz gRPC service', 'protobufjs', { extAuthz: { service: { host: '127.0.0.1:1' }, protocol: 'GRPC' } }],
  ];
  for (const [what, pkg, traffic] of cases) {
    it(`a config with ${what} is refused at load, naming ${pkg}`, async () => {
      const p = await onFreePort(async (port) => start(port, traffic));
      if (p.outcome === 'listening') p.child.kill('SIGTERM');
      expect(p.outcome, p.output()).not.toBe('listening');
      expect(p.outcome).not.toBe(0);
      expect(p.output()).toContain('TG_MODULE_UNAVAILABLE');
      expect(p.output()).toContain(`needs the package ${pkg}`);
    });
  }
});
