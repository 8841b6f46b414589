// TLS to backends over real sockets: HTTPS servers on loopback with certificates made here
// (good, expired, self-signed, wrong name, signed by an unknown CA, with a URI name; one that
// requires a client certificate). A certificate that does not verify is a 502
// TG_UPSTREAM_CERTIFICATE with the reason in the trace; the proxy keeps serving; each TLS
// setting has its own keep-alive pool; the client key never shows in /config_dump or a trace.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfigText, validateStandaloneConfig, type TraceEvent } from '@tollgate/api';
import { issueTestCertificate, type TestCertificate } from '@tollgate/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoed, openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

const ca = issueTestCertificate({ commonName: 'backend-ca', ca: true });
const otherCa = issueTestCertificate({ commonName: 'other-ca', ca: true });
const clientCa = issueTestCertificate({ commonName: 'client-ca', ca: true });
const hour = 3_600_000;
const CERTS = {
  good: issueTestCertificate({ commonName: 'llm.internal', names: ['llm.internal', '127.0.0.1'], issuer: ca }),
  expired: issueTestCertificate({ commonName: 'llm.internal', names: ['llm.internal'], issuer: ca, notBefore: new Date(Date.now() - 48 * hour), notAfter: new Date(Date.now() - 24 * hour) }),
  selfSigned: issueTestCertificate({ commonName: 'llm.internal', names: ['llm.internal'] }),
  wrongName: issueTestCertificate({ commonName: 'other.internal', names: ['other.internal'], issuer: ca }),
  unknownCa: issueTestCertificate({ commonName: 'llm.internal', names: ['llm.internal'], issuer: otherCa }),
  spiffe: issueTestCertificate({ commonName: 'vllm', uris: ['spiffe://cluster.local/ns/ai/sa/vllm'], issuer: ca }),
  wildcard: issueTestCertificate({ commonName: '*.models.internal', names: ['*.models.internal'], issuer: ca }),
};
const client = issueTestCertificate({ commonName: 'tollgate-proxy', issuer: clientCa });
const strangerClient = issueTestCertificate({ commonName: 'stranger', issuer: otherCa });

let dir: string;
const ups: Record<string, Upstream> = {};
let plain: Upstream;
let gw: TestGateway;

async function write(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

const clientFiles = (c: TestCertificate, name: string) => ({ certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) });

function route(name: string, backend: Record<string, unknown>) {
  return { name, matches: [{ path: { value: `/${name}` } }], backends: [backend] };
}

function routes(): unknown[] {
  const caFile = join(dir, 'ca.pem');
  const tls = (extra: Record<string, unknown> = {}) => ({ caFile, hostname: 'llm.internal', ...extra });
  return [
    route('good', { host: ups.good!.host, tls: tls() }),
    route('good-ip', { host: ups.good!.host, tls: { caFile } }),
    route('expired', { host: ups.expired!.host, tls: tls() }),
    route('self-signed', { host: ups.selfSigned!.host, tls: tls() }),
    route('wrong-name', { host: ups.wrongName!.host, tls: tls() }),
    route('unknown-ca', { host: ups.unknownCa!.host, tls: tls() }),
    route('system-roots', { host: ups.good!.host, tls: { hostname: 'llm.internal' } }),
    route('san-uri', { host: ups.spiffe!.host, tls: tls({ hostname: 'vllm.ai.svc', subjectAltNames: [{ type: 'URI', uri: 'spiffe://cluster.local/ns/ai/sa/vllm' }] }) }),
    route('san-uri-wrong', { host: ups.spiffe!.host, tls: tls({ subjectAltNames: [{ type: 'URI', uri: 'spiffe://cluster.local/ns/ai/sa/other' }] }) }),
    route('san-hostname', { host: ups.wildcard!.host, tls: tls({ hostname: 'sni.example', subjectAltNames: [{ type: 'Hostname', hostname: 'a.models.internal' }] }) }),
    route('mtls', { host: ups.mtls!.host, tls: tls({ clientCertificate: clientFiles(client, 'client') }) }),
    route('mtls-none', { host: ups.mtls!.host, tls: tls() }),
    route('mtls-stranger', { host: ups.mtls!.host, tls: tls({ clientCertificate: clientFiles(strangerClient, 'stranger') }) }),
    route('tls13', { host: ups.tls12!.host, tls: tls({ minVersion: 'TLSv1.3' }) }),
    route('tls12', { host: ups.tls12!.host, tls: tls() }),
    route('plain-to-tls', { host: ups.good!.host }),
    route('tls-to-plain', { host: plain.host, tls: tls() }),
  ];
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-backend-tls-'));
  await write('ca.pem', ca.cert);
  for (const [name, c] of [['client', client], ['stranger', strangerClient]] as const) {
    await write(`${name}.crt`, c.cert);
    await write(`${name}.key`, c.key);
  }
  for (const [name, c] of Object.entries(CERTS)) ups[name] = await startUpstream(undefined, { tls: c });
  ups.mtls = await startUpstream(undefined, { tls: { ...CERTS.good, clientCa: clientCa.cert } });
  ups.tls12 = await startUpstream(undefined, { tls: { ...CERTS.good, maxVersion: 'TLSv1.2' } });
  plain = await startUpstream();
  gw = await startGateway((port) => simpleConfig(port, routes()));
});

afterAll(async () => {
  await gw?.close();
  for (const u of Object.values(ups)) await u.close();
  await plain?.close();
  await rm(dir, { recursive: true, force: true });
});

async function traced(path: string): Promise<{ status: number; body: string; error: string; events: TraceEvent[] }> {
  const s = await openTrace(gw.adminUrl);
  await s.armed;
  const r = await send(`${gw.url}${path}`);
  const events = await s.events;
  return { status: r.status, body: r.body, error: r.headers['x-tollgate-error'] as string, events };
}

function callResult(events: TraceEvent[]) {
  const e = events.find((x) => x.message.type === 'backendCallResult');
  if (!e || e.message.type !== 'backendCallResult') throw new Error('no backendCallResult');
  return e.message;
}

describe('a certificate that verifies', () => {
  it('is used: SNI is the hostname whatever the Host header, the request goes through over TLS', async () => {
    const r = await send(`${gw.url}/good`, { headers: { host: 'api.example.com' } });
    expect(r.status).toBe(200);
    expect(echoed(r)).toMatchObject({ url: '/good', headers: { host: 'api.example.com' } });
    expect((JSON.parse(r.body) as { tls: { servername: string } }).tls.servername).toBe('llm.internal');
  });

  it('without hostname, the host part of host is checked (an IP name of the certificate) and no SNI is sent, whatever the Host header', async () => {
    const r = await send(`${gw.url}/good-ip`, { headers: { host: 'api.example.com' } });
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as { tls: { servername: unknown } }).tls.servername).toBe(false);
  });

  it('a URI subjectAltName is accepted in place of the hostname, which stays the SNI', async () => {
    const r = await send(`${gw.url}/san-uri`);
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as { tls: { servername: string } }).tls.servername).toBe('vllm.ai.svc');
  });

  it('a Hostname subjectAltName matches a wildcard certificate', async () => {
    expect((await send(`${gw.url}/san-hostname`)).status).toBe(200);
  });

  it('the client certificate is presented to a backend that requires one', async () => {
    const r = await send(`${gw.url}/mtls`);
    expect(r.status).toBe(200);
    expect((JSON.parse(r.body) as { tls: { client: string } }).tls.client).toBe('tollgate-proxy');
  });

  it('keeps the connection alive across requests (whatever their Host headers), and the trace says https', async () => {
    for (const host of ['a.example.com', 'b.example.com', 'a.example.com']) expect((await send(`${gw.url}/tls12`, { headers: { host } })).status).toBe(200);
    const remotePorts = new Set(ups.tls12!.requests.map((r) => r.socket.remotePort));
    expect(remotePorts.size).toBe(1);
    const t = await traced('/good');
    const final = t.events.find((e) => e.message.type === 'requestSnapshot' && e.message.stage === 'final request');
    expect(final?.message).toMatchObject({ requestState: { backend: { protocol: 'https' } } });
  });
});

describe('a certificate that does not verify is a 502 TG_UPSTREAM_CERTIFICATE with the reason in the trace', () => {
  const cases: [string, RegExp][] = [
    ['expired', /expired/i],
    ['self-signed', /self[- ]signed/i],
    ['wrong-name', /llm\.internal/],
    ['unknown-ca', /unable to (get|verify)/i],
    ['system-roots', /unable to (get|verify)/i],
    ['san-uri-wrong', /spiffe:\/\/cluster\.local\/ns\/ai\/sa\/other/],
  ];
  for (const [path, reason] of cases) {
    it(path, async () => {
      const t = await traced(`/${path}`);
      expect(t.status).toBe(502);
      expect(t.error).toBe('TG_UPSTREAM_CERTIFICATE');
      const result = callResult(t.events);
      expect(result.error).toMatchObject({ kind: 'TG_UPSTREAM_CERTIFICATE' });
      expect(result.error?.message).toMatch(reason);
    });
  }

  it('the proxy keeps serving the good backends afterwards', async () => {
    expect((await send(`${gw.url}/good`)).status).toBe(200);
  });
});

describe('a handshake that fails is a 502 TG_UPSTREAM_TLS', () => {
  it('no common version (TLSv1.3 minimum, a TLSv1.2-only backend)', async () => {
    const t = await traced('/tls13');
    expect(t.status).toBe(502);
    expect(t.error).toBe('TG_UPSTREAM_TLS');
    expect(callResult(t.events).error?.message).toMatch(/version/i);
  });

  it('TLS to a plain HTTP backend', async () => {
    const t = await traced('/tls-to-plain');
    expect(t.status).toBe(502);
    expect(t.error).toBe('TG_UPSTREAM_TLS');
  });

  it('a backend requiring a client certificate refuses a proxy without one, or with one of another CA', async () => {
    for (const path of ['/mtls-none', '/mtls-stranger']) {
      const r = await send(`${gw.url}${path}`);
      expect(r.status).toBe(502);
      expect(['TG_UPSTREAM_TLS', 'TG_UPSTREAM_RESET']).toContain(r.headers['x-tollgate-error']);
    }
  });
});

describe('secrets and the dump', () => {
  it('/config_dump shows the TLS settings and the client certificate facts, never its key', async () => {
    const r = await send(`${gw.adminUrl}/config_dump`);
    expect(r.status).toBe(200);
    expect(r.body).not.toContain('PRIVATE KEY');
    expect(r.body).not.toContain(client.key.split('\n')[1]!);
    const dump = JSON.parse(r.body) as { backends: { name: string; tls: { hostname: string; trust: string; clientCertificate: { subject?: string } | null } | null }[] };
    const tls = dump.backends.map((b) => b.tls).filter((t) => t?.clientCertificate?.subject === 'CN=tollgate-proxy');
    expect(tls.length).toBeGreaterThan(0);
    expect(tls[0]).toMatchObject({ hostname: 'llm.internal', trust: '1 CA certificates' });
  });

  it('a trace of a call with a client certificate holds no key', async () => {
    const t = await traced('/mtls');
    expect(t.status).toBe(200);
    expect(JSON.stringify(t.events)).not.toContain('PRIVATE KEY');
  });
});

describe('a bad tls is refused with the field and the fix; the last good config keeps serving', () => {
  const refusals: [string, (tls: Record<string, unknown>) => Record<string, unknown>, RegExp][] = [
    ['a missing CA file', (t) => ({ ...t, caFile: join(dir, 'nope.pem') }), /routes\[0\]\.backends\[0\]\.tls\.caFile: cannot read .*nope\.pem: no such file/],
    ['a CA file that holds no certificate', (t) => ({ ...t, caFile: join(dir, 'client.key') }), /tls\.caFile: file .*client\.key holds no PEM certificate/],
    ['a Hostname name without hostname', (t) => ({ ...t, subjectAltNames: [{ type: 'Hostname', uri: 'spiffe://a/b' }] }), /subjectAltNames\[0\]\.hostname: required field is missing: type Hostname needs hostname/],
    ['a client key of another certificate', (t) => ({ ...t, clientCertificate: { certFile: join(dir, 'client.crt'), keyFile: join(dir, 'stranger.key') } }), /tls\.clientCertificate\.keyFile: .*does not belong to the certificate/],
    ['an unknown minVersion', (t) => ({ ...t, minVersion: 'TLSv1.1' }), /tls\.minVersion/],
    ['an unknown field', (t) => ({ ...t, insecureSkipVerify: true }), /tls\.insecureSkipVerify: unknown field/],
  ];
  for (const [what, edit, message] of refusals) {
    it(what, async () => {
      const next = simpleConfig(gw.port, [route('good', { host: ups.good!.host, tls: edit({ caFile: join(dir, 'ca.pem'), hostname: 'llm.internal' }) }), ...routes().slice(1)]);
      expect(await gw.rewrite(next)).toBe('refused');
      expect(gw.logs.messages().filter((m) => m.startsWith('config reload refused')).at(-1)).toMatch(message);
      expect((await send(`${gw.url}/good`)).status).toBe(200);
    });
  }
});

describe('examples/providers-tls.yaml', () => {
  it('is a valid config', async () => {
    const file = fileURLToPath(new URL('../../../examples/providers-tls.yaml', import.meta.url));
    const cfg = validateStandaloneConfig(parseConfigText(await readFile(file, 'utf8'), file), file);
    expect(cfg.binds[0]!.listeners[0]!.routes.map((r) => r.backends?.[0]?.tls !== undefined)).toEqual([true, true, true]);
  });
});
