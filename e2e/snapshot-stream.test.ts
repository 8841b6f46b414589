// The snapshot stream on the real API server, secured as deployed: the controller process
// (its chart ServiceAccount's RBAC) makes its CA into a Secret, serves the stream with TLS and
// publishes the CA certificate to the `tollgate-ca` ConfigMap of the Gateway's namespace; a
// proxy's controller source trusts that CA and presents a token of the Gateway's
// ServiceAccount (made by the deployer) issued for audience tollgate, checked by TokenReview.
// - a NACK is a Warning Event and Programmed False (Invalid, the proxy's reason) until a later
//   version is ACKed;
// - a wrong CA fails on the proxy with a message naming the CA file; garbage and wrong-audience
//   tokens are UNAUTHENTICATED, another Gateway's ServiceAccount is PERMISSION_DENIED, each
//   counted and logged by the controller without the token;
// - the CA survives a controller restart (the same Secret, the same ConfigMap).
// Waits on watches and log lines, never on sleeps.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../packages/controller/src/pki/authority.js';
import { LogControl } from '../packages/proxy/src/log/logger.js';
import { ControllerSnapshotSource, type ControllerSecurity } from '../packages/proxy/src/source/controller-source.js';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';
import { programmed, type GatewayStatus } from './lib/conditions.js';
import { faultProxyFor, type FaultProxy } from './lib/fault-proxy.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const APPS = 'apps';

const gateway = (name: string, port: number) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: ${port} }
`;

interface ConfigMap {
  data?: Record<string, string>;
  metadata: { ownerReferences?: { kind: string; name: string }[] };
}
const silent = () => new LogControl('error', new Writable({ write: (_c, _e, cb) => cb() })).get('config');

describe.skipIf(!availability.run)('snapshot stream on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const dir = mkdtempSync(join(tmpdir(), 'tg-stream-'));
  let kubeconfig: string;
  let controller: ControllerProcess;
  let address: string;
  const sources: ControllerSnapshotSource[] = [];
  let caFile: string;
  let faults: FaultProxy | undefined;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const token = async (serviceAccount: string, audience?: string) =>
    (await kubectl(['create', 'token', serviceAccount, '-n', APPS, '--duration=1h', ...(audience ? ['--audience', audience] : [])])).trim();
  const source = (security: ControllerSecurity, gw = `${APPS}/gw`, pod = 'gw-0') => {
    const s = new ControllerSnapshotSource({ address, security, gateway: gw, pod, podNamespace: APPS, log: silent(), initialBackoffMs: 50, maxBackoffMs: 500 });
    sources.push(s);
    return s;
  };
  const reason = (s: ControllerSnapshotSource) => (s.state().lastDisconnect as { reason: string } | null)?.reason;
  const startController = async (name: string, extraArgs: string[] = [], config = kubeconfig) => {
    const c = await ControllerProcess.start(name, cluster.current, config, ['--snapshot-tls-names=127.0.0.1', ...extraArgs]);
    const listening = String((await c.waitForLog((l) => l.msg === 'snapshot stream listening', 30_000)).address);
    return { c, address: listening };
  };

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(dir, 'kubeconfig'));
    ({ c: controller, address } = await startController('controller'));
  }, 120_000);

  afterAll(async () => {
    for (const s of sources) s.stop();
    await controller?.stop('SIGKILL');
    await faults?.close();
  });

  it('makes its CA once into a Secret and publishes its certificate to the Gateway namespace', { timeout: 60_000 }, async () => {
    expect(await controller.waitForLog((l) => l.msg === 'snapshot stream CA created')).toMatchObject({ secret: `${NS}/tollgate-ca` });
    const secret = JSON.parse(await kubectl(['get', 'secret', 'tollgate-ca', '-n', NS, '-o', 'json'])) as { data: Record<string, string>; immutable?: boolean };
    expect(Object.keys(secret.data).sort()).toEqual(['ca.crt', 'ca.key']);
    expect(secret.immutable).toBe(true);
    await controller.synced();
    await kubectl(['apply', '-f', '-'], gateway('gw', 8080));
    const cm = await waitForObject<ConfigMap>(cluster.current, 'configmaps', 'tollgate-ca', APPS, (o) => Boolean(o.data?.['ca.crt']));
    // The public part only, identical to the Secret's certificate; owned by the Gateway.
    expect(Object.keys(cm.data!)).toEqual(['ca.crt']);
    expect(cm.data!['ca.crt']).toBe(Buffer.from(secret.data['ca.crt']!, 'base64').toString('utf8'));
    expect(cm.metadata.ownerReferences?.map((o) => [o.kind, o.name])).toEqual([['Gateway', 'gw']]);
    caFile = file('ca.crt', cm.data!['ca.crt']!);
    // The CA key is never logged.
    const key = Buffer.from(secret.data['ca.key']!, 'base64').toString('utf8').split('\n')[1]!;
    expect(controller.lines.some((l) => JSON.stringify(l).includes(key))).toBe(false);
  });

  it('a NACK is a Warning Event and Programmed False until a later version is ACKed', { timeout: 60_000 }, async () => {
    const first = await controller.waitForLog((l) => l.msg === 'new snapshot' && l.gateway === `${APPS}/gw`);
    await waitForObject(cluster.current, 'serviceaccounts', 'gw-tollgate', APPS, () => true);
    const tokenFile = file('gw.token', await token('gw-tollgate', 'tollgate'));

    // The proxy's own source, with a sink that refuses the first version and applies the rest.
    const applied: string[] = [];
    const s = source({ kind: 'tls', caFile, tokenFile });
    await s.start({
      apply: async (snap) => {
        if (snap.version === first.version) throw new Error('listener http: port 8080 is already in use');
        applied.push(snap.version);
      },
    });
    const rejected = await waitForObject<GatewayStatus>(cluster.current, 'gateways.gateway.networking.k8s.io', 'gw', APPS, (g) => programmed(g)?.reason === 'Invalid');
    expect(programmed(rejected)).toMatchObject({ status: 'False', reason: 'Invalid', message: `proxy gw-0 refused snapshot ${String(first.version)}: listener http: port 8080 is already in use` });
    const events = JSON.parse(await kubectl(['get', 'events', '-n', APPS, '--field-selector', 'reason=SnapshotRejected,involvedObject.name=gw', '-o', 'json'])) as { items: { type: string; note?: string; message?: string }[] };
    expect(events.items.map((e) => [e.type, e.message ?? e.note])).toEqual([['Warning', `proxy gw-0 refused snapshot ${String(first.version)}: listener http: port 8080 is already in use`]]);

    // A fixed Gateway: a new version, ACKed by the only proxy: Programmed is translation's again.
    await kubectl(['apply', '-f', '-'], gateway('gw', 8081));
    const back = await waitForObject<GatewayStatus>(cluster.current, 'gateways.gateway.networking.k8s.io', 'gw', APPS, (g) => programmed(g)?.reason === 'Pending');
    expect(programmed(back)?.status).toBe('False');
    expect(applied).toHaveLength(1);
    expect(s.state()).toMatchObject({ stream: 'connected', security: 'tls', applied: 1, refused: 1 });
    expect(await controller.metric('tollgate_controller_stream_auth_total', { result: 'ok' })).toBe(1);
  });

  it('a proxy refuses a controller its CA file does not vouch for', { timeout: 30_000 }, async () => {
    const stranger = file('stranger.crt', CertificateAuthority.create().ca.certificate);
    const s = source({ kind: 'tls', caFile: stranger, tokenFile: file('unused.token', 'x') });
    await s.start({ apply: async () => undefined });
    await expect.poll(() => reason(s), { timeout: 20_000 }).toMatch(
      new RegExp(`^TLS: the controller at ${address.replace(/\./g, '\\.')} is not trusted with the CA in ${stranger.replace(/\./g, '\\.')} \\(unable to verify the first certificate\\)`),
    );
    expect(s.state()).toMatchObject({ connects: 0, applied: 0 });
  });

  it('refuses garbage and wrong-audience tokens (UNAUTHENTICATED) and another Gateway\'s ServiceAccount (PERMISSION_DENIED)', { timeout: 90_000 }, async () => {
    await kubectl(['apply', '-f', '-'], gateway('other', 9090));
    await waitForObject(cluster.current, 'serviceaccounts', 'other-tollgate', APPS, () => true);
    const wrongAudience = await token('gw-tollgate');
    const otherGateway = await token('other-tollgate', 'tollgate');
    // A JWT that claims to be what the Gateway's proxies present, with a signature of its own.
    const [head, payload] = (await token('gw-tollgate', 'tollgate')).split('.');
    const forged = `${head}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
    const cases: [string, string, RegExp][] = [
      ['garbage', 'not-a-token', /^UNAUTHENTICATED: the token is not a ServiceAccount token \(a JWT\); a proxy presents its current projected ServiceAccount token \(audience tollgate\)$/],
      ['wrong-audience', wrongAudience, /^UNAUTHENTICATED: the token is not issued for audience tollgate \(it is for https:\/\/127\.0\.0\.1:\d+\/\)/],
      ['forged', forged, /^UNAUTHENTICATED: the API server refused the token \(.+\); a proxy presents a current ServiceAccount token issued for audience tollgate$/],
      ['other-gateway', otherGateway, new RegExp(`^PERMISSION_DENIED: ServiceAccount ${APPS}/other-tollgate may not open the stream of Gateway ${APPS}/gw; its proxies run as ServiceAccount ${APPS}/gw-tollgate$`)],
    ];
    const before = controller.lines.length;
    const reviewsBefore = await controller.metric('tollgate_controller_stream_token_reviews_total', { result: 'new' });
    for (const [name, tok, expected] of cases) {
      const s = source({ kind: 'tls', caFile, tokenFile: file(`${name}.token`, tok) }, `${APPS}/gw`, `${name}-0`);
      await s.start({ apply: async () => undefined });
      await expect.poll(() => reason(s), { timeout: 20_000 }).toMatch(expected);
      expect(s.state()).toMatchObject({ connects: 0, applied: 0 });
      s.stop();
    }
    // Logged without the token (at most one line a second for each kind of refusal; the metrics count each).
    await controller.waitForLog((l) => l.code === 'TG_CONTROLLER_STREAM_REFUSED' && String(l.pod).endsWith('-0'), 20_000, before);
    expect(await controller.metric('tollgate_controller_stream_auth_total', { result: 'unauthenticated' })).toBeGreaterThanOrEqual(3);
    // Only the forged token cost a TokenReview; the others were refused for what they say of themselves.
    expect(await controller.metric('tollgate_controller_stream_token_reviews_total', { result: 'new' })).toBe(reviewsBefore + 1);
    expect(await controller.metric('tollgate_controller_stream_auth_total', { result: 'permission_denied' })).toBeGreaterThanOrEqual(1);
    // The other Gateway's own token opens the other Gateway's stream.
    const own = source({ kind: 'tls', caFile, tokenFile: join(dir, 'other-gateway.token') }, `${APPS}/other`, 'other-0');
    await own.start({ apply: async () => undefined });
    await expect.poll(() => own.state().stream, { timeout: 20_000 }).toBe('connected');
    // No token in any log line.
    const logged = controller.lines.map((l) => JSON.stringify(l)).join('\n');
    for (const [, tok] of cases) expect(logged).not.toContain(tok.slice(-24));
  });

  it('keeps its CA across a restart: the same Secret, the same ConfigMap, proxies keep trusting it', { timeout: 90_000 }, async () => {
    const secretBefore = JSON.parse(await kubectl(['get', 'secret', 'tollgate-ca', '-n', NS, '-o', 'json'])) as { metadata: { uid: string; resourceVersion: string } };
    const cmBefore = await kubectl(['get', 'configmap', 'tollgate-ca', '-n', APPS, '-o', 'jsonpath={.data.ca\\.crt}']);
    await controller.stop('SIGTERM');
    ({ c: controller, address } = await startController('controller-restarted'));
    expect(await controller.waitForLog((l) => l.msg === 'snapshot stream CA loaded' || l.msg === 'snapshot stream CA created')).toMatchObject({ msg: 'snapshot stream CA loaded' });
    const secretAfter = JSON.parse(await kubectl(['get', 'secret', 'tollgate-ca', '-n', NS, '-o', 'json'])) as { metadata: { uid: string; resourceVersion: string } };
    expect(secretAfter.metadata).toMatchObject({ uid: secretBefore.metadata.uid, resourceVersion: secretBefore.metadata.resourceVersion });
    await controller.synced();
    // A proxy holding the CA file from before the restart connects to the new process.
    const s = source({ kind: 'tls', caFile, tokenFile: join(dir, 'gw.token') }, `${APPS}/gw`, 'gw-1');
    await s.start({ apply: async () => undefined });
    await expect.poll(() => s.state().stream, { timeout: 30_000 }).toBe('connected');
    expect(await kubectl(['get', 'configmap', 'tollgate-ca', '-n', APPS, '-o', 'jsonpath={.data.ca\\.crt}'])).toBe(cmBefore);
  });

  it('refuses to start on a CA Secret it cannot use, or cannot read, saying which and how to fix it', { timeout: 60_000 }, async () => {
    await kubectl(['create', 'secret', 'generic', 'broken-ca', '-n', NS, '--from-literal=ca.crt=not a certificate', '--from-literal=ca.key=not a key']);
    // With the admin's credentials the Secret is read and found unusable; it is left as it is.
    const unusable = await ControllerProcess.start('controller-broken-ca', cluster.current, cluster.current.kubeconfig, ['--snapshot-ca-secret=broken-ca']);
    expect((await unusable.exited)[0]).toBe(1);
    // The log file is written by a stream that may still be draining the process's stderr.
    const log = (name: string) => () => readFileSync(join(cluster.current.dir, `${name}.log`), 'utf8');
    await expect.poll(log('controller-broken-ca'), { timeout: 10_000 }).toContain(`the snapshot stream has no CA: Secret ${NS}/broken-ca: ca.crt is not a PEM certificate`);
    expect(log('controller-broken-ca')()).toContain(`delete it (kubectl -n ${NS} delete secret broken-ca) and restart the controller to have a new CA made and published to the proxies [TG_CONTROLLER_STREAM_CA]`);
    expect(await kubectl(['get', 'secret', 'broken-ca', '-n', NS, '-o', 'jsonpath={.data.ca\\.crt}'])).toBe(Buffer.from('not a certificate').toString('base64'));
    // With the chart's Role, only the configured Secret may be read: a refusal, not a retry.
    const forbidden = await ControllerProcess.start('controller-forbidden-ca', cluster.current, kubeconfig, ['--snapshot-ca-secret=broken-ca']);
    expect((await forbidden.exited)[0]).toBe(1);
    await expect.poll(log('controller-forbidden-ca'), { timeout: 10_000 }).toMatch(/the snapshot stream has no CA: Secret tollgate-system\/broken-ca: HTTP 403: .*forbidden.* \[TG_CONTROLLER_STREAM_CA\]/);
  });

  it('re-authenticates open streams: a deleted ServiceAccount\'s stream ends; with its new token the proxy is back without being sent anything again', { timeout: 150_000 }, async () => {
    await controller.stop('SIGTERM');
    // Through a fault-free proxy that counts the TokenReviews reaching the API server.
    faults = await faultProxyFor(cluster.current);
    const reviews = () => faults!.count({ verb: 'create', resource: 'tokenreviews' }, 'passed');
    ({ c: controller, address } = await startController('controller-reauth', ['--snapshot-reauth-interval=1s', '--snapshot-token-reviews-per-second=1'], faults.kubeconfig(kubeconfig, join(dir, 'kubeconfig-counted'))));
    await controller.synced();
    const tokenFile = file('reauth.token', await token('gw-tollgate', 'tollgate'));
    const applied: string[] = [];
    const s = source({ kind: 'tls', caFile, tokenFile }, `${APPS}/gw`, 'gw-2');
    await s.start({ apply: async (snap) => void applied.push(snap.version) });
    await expect.poll(() => applied.length, { timeout: 30_000 }).toBe(1);
    const serving = applied[0]!;
    // Checked again every second while it lives, by the API server.
    const opened = reviews();
    await expect.poll(() => controller.metric('tollgate_controller_stream_reauth_total', { result: 'ok' }), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    expect(reviews()).toBeGreaterThanOrEqual(opened + 2);

    // Tokens that cannot be the Gateway's cost the API server nothing; ten forged ones that claim
    // to be are reviewed at the paced rate, the rest told to retry.
    const [head, payload] = (await token('gw-tollgate', 'tollgate')).split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const jwt = (c: Record<string, unknown>) => `${head}.${Buffer.from(JSON.stringify(c)).toString('base64url')}.${Buffer.from('not the signature').toString('base64url')}`;
    const newReviews = () => controller.metric('tollgate_controller_stream_token_reviews_total', { result: 'new' });
    const newBefore = await newReviews();
    const refusedAll = async (tokens: string[], gw: string, expected: RegExp) => {
      const opened = tokens.map((t, i) => source({ kind: 'tls', caFile, tokenFile: file(`flood-${i}.token`, t) }, gw, `flood-${i}`));
      await Promise.all(opened.map((o) => o.start({ apply: async () => undefined })));
      const reasons = await Promise.all(opened.map(async (o) => {
        await expect.poll(() => reason(o), { timeout: 30_000 }).toBeDefined();
        return reason(o)!;
      }));
      for (const o of opened) o.stop();
      for (const r of reasons) expect(r).toMatch(expected);
      return reasons;
    };
    await refusedAll(Array.from({ length: 10 }, (_, i) => `garbage-${i}`), `${APPS}/gw`, /^UNAUTHENTICATED: the token is not a ServiceAccount token/);
    await refusedAll(Array.from({ length: 10 }, (_, i) => jwt({ ...claims, aud: [`https://elsewhere/${i}`] })), `${APPS}/gw`, /^UNAUTHENTICATED: the token is not issued for audience tollgate/);
    await refusedAll(Array.from({ length: 10 }, (_, i) => jwt({ ...claims, jti: `unknown-${i}` })), `${APPS}/nonexistent`, /^PERMISSION_DENIED: the stream of Gateway apps\/nonexistent cannot be opened: the controller knows no Gateway apps\/nonexistent$/);
    expect(await newReviews()).toBe(newBefore);
    const forged = await refusedAll(Array.from({ length: 10 }, (_, i) => jwt({ ...claims, jti: `forged-${i}` })), `${APPS}/gw`, /^(UNAUTHENTICATED: the API server refused the token|UNAVAILABLE: the token was not checked now: more new tokens than the 1 reviews per second)/);
    expect(forged.filter((r) => r.startsWith('UNAVAILABLE')).length).toBeGreaterThanOrEqual(1);
    expect(await controller.metric('tollgate_controller_stream_token_reviews_total', { result: 'throttled' })).toBeGreaterThanOrEqual(1);
    expect(await newReviews()).toBeLessThan(newBefore + 10);
    expect(s.state()).toMatchObject({ stream: 'connected', connects: 1 });

    // The ServiceAccount deleted: the next re-check ends the stream; the proxy keeps serving.
    const uid = await kubectl(['get', 'serviceaccount', 'gw-tollgate', '-n', APPS, '-o', 'jsonpath={.metadata.uid}']);
    await kubectl(['delete', 'serviceaccount', 'gw-tollgate', '-n', APPS]);
    const ended = await controller.waitForLog((l) => l.reason === 'reauth_refused', 30_000);
    expect(ended).toMatchObject({ code: 'TG_CONTROLLER_STREAM_REFUSED', gateway: `${APPS}/gw`, pod: 'gw-2', status: 'UNAUTHENTICATED' });
    expect(ended.msg).toMatch(/^snapshot stream of apps\/gw to gw-2 ended: UNAUTHENTICATED: re-authentication refused: the API server refused the token \(.+\)/);
    expect(await controller.metric('tollgate_controller_stream_ended_total', { reason: 'reauth_refused' })).toBe(1);
    // The proxy heard why, then retried with the same token, refused when the stream opens.
    await expect.poll(() => reason(s), { timeout: 30_000 }).toMatch(/^UNAUTHENTICATED: (re-authentication refused: )?the API server refused the token/);
    expect(s.state()).toMatchObject({ version: serving, applied: 1 });
    // The deployer puts the ServiceAccount back (a new one); its token gets the proxy in again,
    // which is sent nothing: it serves the current version.
    await waitForObject<{ metadata: { uid: string } }>(cluster.current, 'serviceaccounts', 'gw-tollgate', APPS, (o) => o.metadata.uid !== uid);
    writeFileSync(tokenFile, await token('gw-tollgate', 'tollgate'));
    await expect.poll(() => s.state().connects, { timeout: 30_000 }).toBe(2);
    expect(s.state()).toMatchObject({ stream: 'connected', version: serving, applied: 1 });
    expect(applied).toEqual([serving]);
  });
});
