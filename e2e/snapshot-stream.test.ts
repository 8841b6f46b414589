// The snapshot stream on the real API server: a proxy's controller source connected to the
// controller process (run with --snapshot-plaintext) refuses a snapshot; the Gateway gets a
// Warning Event and Programmed False (Invalid, the proxy's reason); once the proxy ACKs a later
// version, Programmed is what translation reports again. Waits on watches, never on sleeps.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxySnapshot } from '../packages/api/src/index.js';
import { LogControl } from '../packages/proxy/src/log/logger.js';
import { ControllerSnapshotSource } from '../packages/proxy/src/source/controller-source.js';
import { ControllerProcess, serviceAccountKubeconfig, waitForObject } from './controller-process.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const CHART = join(REPO_ROOT, 'charts/tollgate');
const NS = 'tollgate-system';
const APPS = 'apps';

const gateway = (port: number) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners:
  - { name: http, protocol: HTTP, port: ${port} }
`;

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
interface GatewayStatus {
  status?: { conditions?: Condition[] };
}
const programmed = (g: GatewayStatus) => g.status?.conditions?.find((c) => c.type === 'Programmed');

describe.skipIf(!availability.run)('snapshot stream on kube-apiserver', () => {
  const cluster = useCluster({ tollgateCrds: false });
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  let controller: ControllerProcess;
  let source: ControllerSnapshotSource | undefined;

  beforeAll(async () => {
    await run(cluster.current.tools.helm, ['install', 'tollgate', CHART, '-n', NS, '--create-namespace'], { env: cluster.current.env });
    await kubectl(['create', 'namespace', APPS]);
    const kubeconfig = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(mkdtempSync(join(tmpdir(), 'tg-stream-')), 'kubeconfig'));
    controller = await ControllerProcess.start('controller', cluster.current, kubeconfig, ['--snapshot-plaintext']);
  }, 120_000);

  afterAll(async () => {
    source?.stop();
    await controller?.stop('SIGKILL');
  });

  it('a NACK is a Warning Event and Programmed False until a later version is ACKed', { timeout: 60_000 }, async () => {
    const address = String((await controller.waitForLog((l) => l.msg === 'snapshot stream listening', 30_000)).address);
    await controller.synced();
    await kubectl(['apply', '-f', '-'], gateway(8080));
    const first = await controller.waitForLog((l) => l.msg === 'new snapshot' && l.gateway === `${APPS}/gw`);

    // The proxy's own source, with a sink that refuses the first version and applies the rest.
    const applied: string[] = [];
    source = new ControllerSnapshotSource({ address, gateway: `${APPS}/gw`, pod: 'gw-0', podNamespace: APPS, log: new LogControl('error', new Writable({ write: (_c, _e, cb) => cb() })).get('config') });
    await source.start({
      apply: async (s: ProxySnapshot) => {
        if (s.version === first.version) throw new Error('listener http: port 8080 is already in use');
        applied.push(s.version);
      },
    });
    const rejected = await waitForObject<GatewayStatus>(cluster.current, 'gateways.gateway.networking.k8s.io', 'gw', APPS, (g) => programmed(g)?.reason === 'Invalid');
    expect(programmed(rejected)).toMatchObject({ status: 'False', reason: 'Invalid', message: `proxy gw-0 refused snapshot ${String(first.version)}: listener http: port 8080 is already in use` });
    const events = JSON.parse(await kubectl(['get', 'events', '-n', APPS, '--field-selector', 'reason=SnapshotRejected,involvedObject.name=gw', '-o', 'json'])) as { items: { type: string; note?: string; message?: string }[] };
    expect(events.items.map((e) => [e.type, e.message ?? e.note])).toEqual([['Warning', `proxy gw-0 refused snapshot ${String(first.version)}: listener http: port 8080 is already in use`]]);

    // A fixed Gateway: a new version, ACKed by the only proxy: Programmed is translation's again.
    await kubectl(['apply', '-f', '-'], gateway(8081));
    const back = await waitForObject<GatewayStatus>(cluster.current, 'gateways.gateway.networking.k8s.io', 'gw', APPS, (g) => programmed(g)?.reason === 'Pending');
    expect(programmed(back)?.status).toBe('False');
    expect(applied).toHaveLength(1);
    expect(source.state()).toMatchObject({ stream: 'connected', applied: 1, refused: 1 });
  });
});
