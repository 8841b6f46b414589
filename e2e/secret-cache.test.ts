// What the controller holds of Secrets, on a real kube-apiserver: the chart installed, the
// controller out of cluster with the chart ServiceAccount's token. A tenant fills its namespace
// with large kubernetes.io/tls Secrets no Gateway uses; the controller's caches keep their
// metadata only (names, versions, labels), and the whole object of the one Secret a listener
// references, as its metrics show (tollgate_controller_cached_objects and _cached_data_bytes).
// A Secret referenced later is read then; a rotated one reaches the snapshot; one no longer
// referenced is dropped. The same holds for ConfigMaps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET_FIELD_SELECTOR } from '../packages/controller/src/watch/kinds.js';
import { issueTestCertificate } from '../packages/testkit/src/index.js';
import { installChart, startAsChart, sumMetric, type ControllerProcess, waitForObject } from './controller-process.js';
import type { Condition } from './lib/conditions.js';
import { run } from './lib/exec.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'tenant';
/** Unreferenced Secrets of about 1 MiB each (the API server's limit for a Secret's data is 1 MiB). */
const LARGE = 16;
const LARGE_BYTES = 1024 * 1024 - 4096;

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const first = issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'] });
const second = issueTestCertificate({ commonName: 'a.example.com', names: ['a.example.com'] });
const tlsSecret = (name: string, crt: string, key: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: APPS }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(crt), 'tls.key': b64(key) } });
const gateway = (secretName: string) =>
  JSON.stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'secure', namespace: APPS },
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'https', protocol: 'HTTPS', port: 443, hostname: 'a.example.com', tls: { certificateRefs: [{ name: secretName }] } }] },
  });

interface GatewayStatus {
  status?: { listeners?: { name: string; conditions: Condition[] }[] };
}
const resolvedRefs = (g: GatewayStatus) => g.status?.listeners?.[0]?.conditions.find((c) => c.type === 'ResolvedRefs');

describe.skipIf(!availability.run)('the controller’s Secret cache on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });
  const apply = (doc: string) => kubectl(['apply', '-f', '-'], doc);
  const listener = (predicate: (c: Condition | undefined) => boolean) => waitForObject<GatewayStatus>(cluster.current, 'gateway', 'secure', APPS, (g) => predicate(resolvedRefs(g)));
  let controller: ControllerProcess;
  /** Secrets the watch sends (every one but service-account tokens and Helm releases), e.g. the controller's CA besides the tenant's. */
  let watched = 0;
  const cached = async () => {
    const text = await controller.metrics();
    return {
      full: sumMetric(text, 'tollgate_controller_cached_objects', { kind: 'Secret', form: 'full' }),
      metadata: sumMetric(text, 'tollgate_controller_cached_objects', { kind: 'Secret', form: 'metadata' }),
      bytes: sumMetric(text, 'tollgate_controller_cached_data_bytes', { kind: 'Secret' }),
    };
  };

  beforeAll(async () => {
    await installChart(cluster.current, [APPS]);
    // A certificate and a key of about 1 MiB that is no key: the API server accepts it as a tls Secret.
    const junk = 'x'.repeat(LARGE_BYTES);
    // Before the controller starts (its first list sees it): a parameters ConfigMap nothing names.
    await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bulk', namespace: APPS, labels: { 'tollgate.dev/parameters': 'true' } }, data: { replicas: junk } }));
    controller = await startAsChart(cluster.current, 'controller-secret-cache');
    // After it started (its watch sees them). create, not apply: apply would also store the whole object in an annotation.
    for (let i = 0; i < LARGE; i++) await kubectl(['create', '-f', '-'], JSON.stringify(tlsSecret(`bulk-${i}`, first.cert, junk)));
  }, 180_000);

  afterAll(async () => {
    await controller?.stop('SIGKILL');
  });

  it('holds the metadata of every tls Secret and the whole of the one a listener references', async () => {
    await apply(JSON.stringify(tlsSecret('cert', first.cert, first.key)));
    await apply(gateway('cert'));
    // The Secret watch is ordered: once the listener resolved `cert`, every earlier Secret was seen.
    await listener((c) => c?.status === 'True');
    watched = (JSON.parse(await kubectl(['get', 'secrets', '-A', `--field-selector=${SECRET_FIELD_SELECTOR}`, '-o', 'json'])) as { items: unknown[] }).items.length;
    expect(watched).toBeGreaterThanOrEqual(LARGE + 1);
    const c = await cached();
    expect(c.metadata).toBe(watched);
    expect(c.full).toBe(1);
    expect(c.bytes).toBe(b64(first.cert).length + b64(first.key).length);
    const text = await controller.metrics();
    // The bulk ConfigMap (and any the controller publishes meanwhile) as metadata only.
    expect(sumMetric(text, 'tollgate_controller_cached_objects', { kind: 'ConfigMap', form: 'metadata' })).toBeGreaterThanOrEqual(1);
    expect(sumMetric(text, 'tollgate_controller_cached_objects', { kind: 'ConfigMap', form: 'full' })).toBe(0);
    expect(sumMetric(text, 'tollgate_controller_cached_data_bytes', { kind: 'ConfigMap' })).toBe(0);
  });

  it('a rotated Secret reaches the snapshot', async () => {
    const from = controller.lines.length;
    await apply(JSON.stringify(tlsSecret('cert', second.cert, second.key)));
    await controller.waitForLog((l) => l.msg === 'new snapshot' && l.gateway === `${APPS}/secure`, 60_000, from);
    const view = await (await fetch(`http://${controller.admin}/snapshots`)).text();
    expect(view).toContain(second.cert.split('\n')[2]);
    expect((await cached()).bytes).toBe(b64(second.cert).length + b64(second.key).length);
  });

  it('a restarted controller reads the referenced Secret before its first snapshot: the same version as before', async () => {
    const before = controller.lines.filter((l) => l.msg === 'new snapshot' && l.gateway === `${APPS}/secure`).at(-1)!.version;
    await controller.stop('SIGTERM');
    controller = await startAsChart(cluster.current, 'controller-secret-cache-2');
    const first = await controller.waitForLog((l) => l.msg === 'new snapshot' && l.gateway === `${APPS}/secure`, 60_000);
    // Had it translated before reading the Secret, its first snapshot would have no certificate.
    expect(first.version).toBe(before);
    expect((await cached()).full).toBe(1);
  });

  it('a Secret referenced later is read then, and one no longer referenced is dropped', async () => {
    await apply(gateway('bulk-3'));
    // Read whole: its key is parsed (and is no key).
    const refused = await listener((c) => c?.reason === 'InvalidCertificateRef' && c.message.includes('bulk-3'));
    expect(resolvedRefs(refused)!.message).not.toContain('does not exist');
    const c = await cached();
    expect(c.full).toBe(1);
    expect(c.bytes).toBeGreaterThan(LARGE_BYTES);
    await apply(gateway('absent'));
    await listener((x) => x?.message.includes('absent') === true);
    expect(await cached()).toMatchObject({ full: 0, bytes: 0, metadata: watched });
  });
});
