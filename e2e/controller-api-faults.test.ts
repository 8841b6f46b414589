// The controller's failure paths against the real kube-apiserver, through the real
// @kubernetes/client-node (its ApiException, its connection errors): each component runs in
// this process as the controller builds it, with the chart ServiceAccount's token, behind the
// fault-injecting proxy (e2e/lib/fault-proxy.ts). A 409 comes from a real second writer: the
// proxy holds the component's write while another client writes the same object, so the API
// server refuses the held write for its stale resourceVersion. 429, 500, 503 and resets come
// from the proxy. Each test asserts that the fault happened (the proxy counted it, the second
// write landed) before it asserts the recovery, and reads the end state back from the API
// server. The leader elector judges time by the clock it is given: here one the test moves,
// so expiry and the renew deadline are events of the test, not waits.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LogSink, deferred, until } from '../packages/testkit/src/index.js';
import { KubeDeployerApi } from '../packages/controller/src/deployer/api.js';
import { Deployer, type DeployerPassResult } from '../packages/controller/src/deployer/deployer.js';
import { OwnedObjects } from '../packages/controller/src/deployer/owned-watch.js';
import { DEFAULT_PROXY_SETTINGS } from '../packages/controller/src/proxy-settings/defaults.js';
import { loadKubeConfig } from '../packages/controller/src/kube/config.js';
import { createLogs } from '../packages/controller/src/log/components.js';
import { KubeLeaseApi, LeaseElector } from '../packages/controller/src/leader/elector.js';
import { ControllerMetrics } from '../packages/controller/src/metrics/metrics.js';
import { CertificateAuthority } from '../packages/controller/src/pki/authority.js';
import { CaLoader } from '../packages/controller/src/pki/ca-loader.js';
import { CaPublisher, KubeConfigMapApi } from '../packages/controller/src/pki/ca-publisher.js';
import { KubeCaSecretApi } from '../packages/controller/src/pki/ca-secret.js';
import { servingNames } from '../packages/controller/src/pki/names.js';
import { KubeStatusApi } from '../packages/controller/src/status/api.js';
import { StatusWriter, type CacheReader } from '../packages/controller/src/status/writer.js';
import type { StatusReport } from '../packages/controller/src/translate/types.js';
import type { Gateway } from '../packages/controller/src/types/gateway-api.js';
import { installChart, serviceAccountKubeconfig } from './controller-process.js';
import { SYSTEM_NAMESPACE as NS } from './lib/chart.js';
import { run } from './lib/exec.js';
import { faultProxyFor, matches, type FaultProxy, type Match } from './lib/fault-proxy.js';
import { e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();
const APPS = 'apps';
const OURS = 'tollgate.dev/gateway-controller';
const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** Retries of the components under test come quickly here: only their number matters. */
const FAST_RETRY = { initialMs: 50, maxMs: 400 };

/** A component's logger, its lines kept. */
const logger = () => {
  const sink = new LogSink();
  return { sink, log: createLogs('debug', sink).get('default') };
};
interface Meta {
  metadata: { name: string; namespace?: string; resourceVersion?: string; ownerReferences?: { name: string }[] };
}
const warnings = (sink: LogSink, msg: string) => sink.lines.filter((l) => l.msg === msg).length;

describe.skipIf(!availability.run)('controller retry paths on kube-apiserver, faults from a proxy and a second writer', () => {
  const cluster = useCluster({ tollgateCrds: false });
  let proxy: FaultProxy;
  let proxied: string;
  // kubectl as admin, straight to the API server: the second writer, and the reader of end states.
  const kubectl = (args: string[], input?: string) => run(cluster.current.tools.kubectl, args, { env: cluster.current.env, input });
  const read = async <T>(resource: string, name: string, namespace: string) => JSON.parse(await kubectl(['get', resource, name, '-n', namespace, '-o', 'json'])) as T & Meta;
  /** Replaces what `obj` names (its resourceVersion: refused if stale); the stored object. */
  const replace = async <T>(obj: T & Meta, subresource?: string) => JSON.parse(await kubectl(['replace', '-o', 'json', '-f', '-', ...(subresource ? [`--subresource=${subresource}`] : [])], JSON.stringify(obj))) as T & Meta;
  /** A client as the controller makes one (its kubeconfig loader), through the proxy. */
  const controllerKc = () => loadKubeConfig(proxied, {}).kc;

  beforeAll(async () => {
    await installChart(cluster.current, [APPS]);
    const dir = mkdtempSync(join(tmpdir(), 'tg-api-faults-'));
    const direct = await serviceAccountKubeconfig(cluster.current, NS, 'tollgate-controller', join(dir, 'direct.kubeconfig'));
    proxy = await faultProxyFor(cluster.current);
    proxied = proxy.kubeconfig(direct, join(dir, 'kubeconfig'));
  }, 120_000);
  afterEach(() => proxy.clearRules());
  afterAll(async () => {
    await proxy?.close();
  });

  const gatewayYaml = (name: string) => `
apiVersion: ${GATEWAY_GROUP}/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${APPS} }
spec:
  gatewayClassName: tollgate
  listeners: [ { name: http, protocol: HTTP, port: 80 } ]
`;
  /** A Gateway made on the API server, as the caches would hand it over (uid included). */
  const makeGateway = async (name: string): Promise<Gateway> => {
    await kubectl(['apply', '-f', '-'], gatewayYaml(name));
    return JSON.parse(await kubectl(['get', 'gateway', name, '-n', APPS, '-o', 'json'])) as Gateway;
  };

  describe('status writer', () => {
    const OTHER = 'example.com/other-controller';
    type Route = { apiVersion: string; kind: string; status?: { parents?: Parent[] } };
    const getRoute = (name: string) => read<Route>('httproute', name, APPS);
    interface Parent {
      parentRef: { name: string; sectionName?: string };
      controllerName: string;
      conditions: { type: string; status: string; reason: string; message: string; lastTransitionTime: string; observedGeneration: number }[];
    }
    const report = (name: string): StatusReport => ({
      gatewayClasses: new Map(),
      gateways: new Map(),
      httpRoutes: new Map([
        [
          `${APPS}/${name}`,
          {
            namespace: APPS,
            name,
            generation: 1,
            parents: [
              {
                parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', namespace: APPS, name: 'gw' },
                controllerName: OURS,
                conditions: ['Accepted', 'ResolvedRefs'].map((type) => ({ type, status: 'True' as const, reason: type, message: '', observedGeneration: 1 })),
              },
            ],
          },
        ],
      ]),
      gatewayPolicies: new Map(),
      backendTLSPolicies: new Map(),
    });
    /** A writer whose cache holds the route as the API server had it when the test read it. */
    const writer = async (name: string) => {
      // The informer's copy: the API server's object as JSON, as the client hands it over.
      const cached = (await getRoute(name)) as unknown as ReturnType<CacheReader>;
      const metrics = new ControllerMetrics();
      const { sink, log } = logger();
      const w = new StatusWriter({ api: new KubeStatusApi(controllerKc()), cache: () => cached, controllerName: OURS, isLeader: () => true, metrics, log, retry: FAST_RETRY });
      const writes = async (result: string) => (await metrics.statusWrites.get()).values.filter((v) => v.labels.result === result).reduce((a, v) => a + v.value, 0);
      return { w, sink, writes };
    };
    const statusPut = (name: string): Match => ({ verb: 'update', resource: 'httproutes', subresource: 'status', name });
    const history = (name: string) => proxy.records.filter((r) => r.resource === 'httproutes' && r.name === name).map((r) => `${r.verb}${r.subresource ? `/${r.subresource}` : ''} ${r.code ?? r.outcome}`);

    beforeAll(async () => {
      for (const name of ['contested', 'flaky', 'gone']) {
        await kubectl(['apply', '-f', '-'], `
apiVersion: ${GATEWAY_GROUP}/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${APPS} }
spec: { parentRefs: [ { name: gw } ] }
`);
      }
    });

    it('a write that meets another controller\'s status write (409) is merged again on a fresh read: both entries stay', async () => {
      const theirs: Parent = {
        parentRef: { name: 'gw', sectionName: 'http' },
        controllerName: OTHER,
        conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'theirs', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 }],
      };
      let written: Meta | undefined;
      const hold = proxy.rule({
        match: statusPut('contested'),
        times: 1,
        // Another controller writes its own parent entry while our write is on its way.
        fault: {
          kind: 'hold',
          release: async () => {
            const current = await getRoute('contested');
            written = await replace({ ...current, status: { parents: [theirs] } }, 'status');
          },
        },
      });
      const { w, writes } = await writer('contested');
      await w.start();
      w.submit(report('contested'));
      await w.idle();
      await w.stop();

      // The second write landed, and the held one was refused for it.
      expect(hold.injected).toBe(1);
      expect(written?.metadata.resourceVersion).toBeDefined();
      expect(history('contested')).toEqual(['update/status 409', 'get 200', 'update/status 200']);
      expect(await writes('conflict')).toBe(1);
      expect(await writes('written')).toBe(1);
      expect(await writes('error')).toBe(0);
      const stored = await getRoute('contested');
      expect(Number(stored.metadata.resourceVersion)).toBeGreaterThan(Number(written!.metadata.resourceVersion));
      expect(stored.status!.parents!.map((p) => [p.controllerName, p.conditions[0]!.status, p.conditions[0]!.message])).toEqual([
        [OTHER, 'True', 'theirs'],
        [OURS, 'True', ''],
      ]);
    });

    it('a write refused with 503 or 500, or cut by a reset, is tried again by a later pass until it lands', async () => {
      const faults = [
        proxy.rule({ match: statusPut('flaky'), fault: { kind: 'status', code: 503 }, times: 1 }),
        proxy.rule({ match: statusPut('flaky'), fault: { kind: 'status', code: 500 }, times: 1 }),
        proxy.rule({ match: statusPut('flaky'), fault: { kind: 'reset' }, times: 1 }),
      ];
      const { w, sink, writes } = await writer('flaky');
      await w.start();
      w.submit(report('flaky'));
      // Nothing submits again: only the writer's own retries reach the fourth attempt.
      await proxy.recorded(statusPut('flaky'), 4);
      await w.idle();
      await w.stop();

      expect(faults.map((f) => f.injected)).toEqual([1, 1, 1]);
      expect(history('flaky')).toEqual(['update/status 503', 'update/status 500', 'update/status reset', 'update/status 200']);
      expect(await writes('error')).toBe(3);
      expect(await writes('written')).toBe(1);
      expect(sink.lines.filter((l) => l.msg === 'status write failed').map((l) => String(l.err).slice(0, 8))).toEqual(['HTTP 503', 'HTTP 500', expect.not.stringMatching(/^HTTP/)]);
      const stored = await getRoute('flaky');
      expect(stored.status!.parents!.map((p) => p.controllerName)).toEqual([OURS]);
    });

    it('an object deleted before its write lands (404) is no failure and is not retried', async () => {
      const hold = proxy.rule({ match: statusPut('gone'), times: 1, fault: { kind: 'hold', release: () => kubectl(['delete', 'httproute', 'gone', '-n', APPS]) } });
      const { w, sink, writes } = await writer('gone');
      await w.start();
      w.submit(report('gone'));
      await w.idle();
      await w.stop();

      expect(hold.injected).toBe(1);
      expect(history('gone')).toEqual(['update/status 404']);
      expect(await writes('not_found')).toBe(1);
      expect(await writes('error')).toBe(0);
      expect(warnings(sink, 'status write failed')).toBe(0);
      expect((await kubectl(['get', 'httproutes', '-n', APPS, '-o', 'name'])).split('\n')).not.toContain('httproute.gateway.networking.k8s.io/gone');
    });
  });

  describe('deployer', () => {
    const PARAMS = { proxyImage: 'ghcr.io/tollgate-dev/tollgate:0.1.0', snapshotService: 'tollgate-controller.tollgate-system.svc:9978', defaults: DEFAULT_PROXY_SETTINGS };
    const passes: DeployerPassResult[] = [];
    let waiting: { until: (r: DeployerPassResult) => boolean; resolve: () => void } | undefined;
    /** The next pass (from now) that `until` accepts. */
    const pass = (until: (r: DeployerPassResult) => boolean) => {
      const d = deferred();
      waiting = { until, resolve: d.resolve };
      return d.promise;
    };
    const { sink, log } = logger();
    let deployer: Deployer;
    let edge: Gateway;
    let old: Gateway;
    /** The proxy objects of `gateway` present on the API server. */
    const present = async (gateway: string) =>
      (await kubectl(['get', 'serviceaccounts,deployments,services', '-n', APPS, '-l', `gateway.networking.k8s.io/gateway-name=${gateway}`, '-o', 'name'])).split('\n').filter(Boolean);

    beforeAll(async () => {
      edge = await makeGateway('edge');
      old = await makeGateway('old');
      const onPass = (r: DeployerPassResult) => {
        passes.push(r);
        if (waiting?.until(r)) {
          waiting.resolve();
          waiting = undefined;
        }
      };
      deployer = new Deployer({ api: new KubeDeployerApi(controllerKc()), params: PARAMS, isLeader: () => true, log, onPass, retry: FAST_RETRY });
      await deployer.start();
    });
    afterAll(async () => {
      await deployer?.stop();
    });

    it('applies that fail (500, reset, 429) are retried by later passes, without a change, and only they', async () => {
      const deployment: Match = { verb: 'patch', resource: 'deployments', namespace: APPS, name: 'edge-tollgate' };
      const service: Match = { verb: 'patch', resource: 'services', namespace: APPS, name: 'edge-tollgate' };
      const faults = [
        proxy.rule({ match: deployment, fault: { kind: 'status', code: 500 }, times: 1 }),
        proxy.rule({ match: deployment, fault: { kind: 'reset' }, times: 1 }),
        proxy.rule({ match: service, fault: { kind: 'status', code: 429, retryAfterSeconds: 1 }, times: 1 }),
      ];
      const healed = pass((r) => r.failed === 0);
      deployer.submit([edge]);
      await healed;

      expect(faults.map((f) => f.injected)).toEqual([1, 1, 1]);
      expect(passes.map((p) => p.failed)).toEqual([2, 1, 0]);
      // Each object was applied until it landed, the ServiceAccount (never refused) once.
      expect(proxy.codes({ verb: 'patch', resource: 'serviceaccounts', name: 'edge-tollgate' })).toEqual([201]);
      expect(proxy.codes(deployment)).toEqual([500, undefined, 201]);
      expect(proxy.codes(service)).toEqual([429, 201]);
      expect(sink.lines.filter((l) => l.msg.startsWith('could not apply')).map((l) => String(l.err).slice(0, 8))).toEqual(['HTTP 500', 'HTTP 429', expect.not.stringMatching(/^HTTP/)]);
      expect(await present('edge')).toEqual(['serviceaccount/edge-tollgate', 'deployment.apps/edge-tollgate', 'service/edge-tollgate']);
    });

    it('a listing refused with 503 deletes nothing; the retried pass prunes what no Gateway needs', async () => {
      const deployed = pass((r) => r.failed === 0);
      deployer.submit([edge, old]);
      await deployed;
      expect(await present('old')).toHaveLength(3);

      const listServices: Match = { verb: 'list', resource: 'services' };
      const refused = proxy.rule({ match: listServices, fault: { kind: 'status', code: 503 }, times: 1 });
      const from = proxy.records.length;
      const pruned = pass((r) => r.deleted > 0);
      deployer.submit([edge]);
      await pruned;

      expect(refused.injected).toBe(1);
      expect(sink.lines.filter((l) => l.msg === 'deployer pass failed; retrying').map((l) => l.err)).toEqual(['HTTP 503: injected 503']);
      // No delete before the listing was complete: the first delete follows the relisting.
      const after = proxy.records.slice(from);
      const refusal = after.findIndex((r) => matches(listServices, r) && r.code === 503);
      const relisted = after.findIndex((r, i) => i > refusal && matches(listServices, r) && r.code === 200);
      const firstDelete = after.findIndex((r) => r.verb === 'delete');
      expect(refusal).toBeGreaterThanOrEqual(0);
      expect(relisted).toBeGreaterThan(refusal);
      expect(firstDelete).toBeGreaterThan(relisted);
      expect(passes.at(-1)).toMatchObject({ deleted: 3, failed: 0 });
      expect(await present('old')).toEqual([]);
      expect(await present('edge')).toHaveLength(3);
    });

    it('with the watch of its objects, a pass that wants what is in place lists nothing; an object deleted by hand is put back', async () => {
      const watched = await makeGateway('watched');
      const results: DeployerPassResult[] = [];
      const next: { n: number; resolve: () => void }[] = [];
      const passCount = (n: number) => (results.length >= n ? Promise.resolve() : new Promise<void>((resolve) => next.push({ n, resolve })));
      const onPass = (r: DeployerPassResult) => {
        results.push(r);
        for (const w of next.splice(0)) {
          if (results.length >= w.n) w.resolve();
          else next.push(w);
        }
      };
      // Wired as the controller wires them: the deployer reads the watch's epoch, the watch tells the deployer.
      const d: Deployer = new Deployer({ api: new KubeDeployerApi(controllerKc()), params: PARAMS, isLeader: () => true, log, onPass, retry: FAST_RETRY, watchEpoch: () => objects.epoch });
      const objects = new OwnedObjects(controllerKc(), (kind, event, obj) => d.observed(kind, event, obj), log);
      await objects.start();
      await d.start();
      try {
        expect(objects.epoch).not.toBeNull();
        const lists: Match = { verb: 'list', resource: /^(serviceaccounts|deployments|services)$/ };
        // The Gateways the other deployer left in place, and one more.
        d.submit([edge, watched]);
        await passCount(1);
        expect(results[0]).toMatchObject({ failed: 0 });
        expect(await present('watched')).toHaveLength(3);

        // A reconcile of anything else: the same Gateways again.
        const from = proxy.records.length;
        d.submit([edge, watched]);
        await passCount(2);
        expect(results[1]).toEqual({ applied: 0, deleted: 0, failed: 0 });
        expect(proxy.records.slice(from).filter((r) => matches(lists, r) || r.verb === 'patch' || r.verb === 'delete')).toEqual([]);

        // Deleted by hand: the watch tells, and the pass it starts lists and puts it back.
        const before = results.length;
        await kubectl(['delete', 'deployment', 'watched-tollgate', '-n', APPS, '--wait=false']);
        await passCount(before + 1);
        await until(async () => (await present('watched')).includes('deployment.apps/watched-tollgate'), { timeoutMs: 30_000, what: 'the Deployment put back' });
        expect(results.slice(before).some((r) => r.applied === 1)).toBe(true);
      } finally {
        await d.stop();
        await objects.stop();
      }
    });
  });

  describe('CA certificate', () => {
    it('publishing to a Gateway namespace retries a refused read (429) and apply (503, reset) until the ConfigMap is there', async () => {
      const gateway = await makeGateway('published');
      const { ca } = CertificateAuthority.create();
      const check: Match = { verb: 'list', resource: 'configmaps', namespace: APPS };
      const write: Match = { verb: 'patch', resource: 'configmaps', namespace: APPS, name: 'tollgate-ca' };
      const faults = [
        proxy.rule({ match: check, fault: { kind: 'status', code: 429, retryAfterSeconds: 1 }, times: 1 }),
        proxy.rule({ match: write, fault: { kind: 'status', code: 503 }, times: 1 }),
        proxy.rule({ match: write, fault: { kind: 'reset' }, times: 1 }),
      ];
      const { sink, log } = logger();
      const publisher = new CaPublisher({ api: new KubeConfigMapApi(controllerKc()), log, retry: FAST_RETRY });
      await publisher.start();
      publisher.submit([gateway]);
      publisher.setCertificate(ca.certificate);
      await sink.waitFor((l) => l.msg === 'CA certificate published');
      await publisher.stop();

      expect(faults.map((f) => f.injected)).toEqual([1, 1, 1]);
      expect(proxy.codes(write)).toEqual([503, undefined, 201]);
      expect(sink.lines.filter((l) => String(l.msg).startsWith('could not publish')).map((l) => String(l.err).slice(0, 8))).toEqual(['HTTP 429', 'HTTP 503', expect.not.stringMatching(/^HTTP/)]);
      const cm = await read<{ data?: Record<string, string> }>('configmap', 'tollgate-ca', APPS);
      expect(cm.data).toEqual({ 'ca.crt': ca.certificate });
      expect(cm.metadata.ownerReferences?.map((o) => o.name)).toContain('published');
    });

    it('a replica that loses the race to create the CA Secret (409 from the API server) uses the winner\'s CA', async () => {
      const secret: Match = { resource: 'secrets', namespace: NS };
      const winner = CertificateAuthority.create();
      const busy = proxy.rule({ match: { ...secret, verb: 'get' }, fault: { kind: 'status', code: 503 }, times: 1 });
      const race = proxy.rule({
        match: { ...secret, verb: 'create' },
        times: 1,
        // Another replica creates it while our create is on its way.
        fault: {
          kind: 'hold',
          release: () =>
            kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tollgate-ca', namespace: NS }, type: 'Opaque', stringData: { 'ca.crt': winner.ca.certificate, 'ca.key': winner.privateKeyPem } })),
        },
      });
      const { sink, log } = logger();
      const loader = new CaLoader({ api: new KubeCaSecretApi(controllerKc()), namespace: NS, secret: 'tollgate-ca', names: servingNames('tollgate-controller.tollgate-system.svc'), log });
      await loader.start();
      await loader.stop();

      expect(busy.injected).toBe(1);
      expect(race.injected).toBe(1);
      expect(proxy.records.filter((r) => matches(secret, r)).map((r) => `${r.verb} ${r.code}`)).toEqual(['get 503', 'get 404', 'create 409', 'get 200']);
      expect(sink.lines.map((l) => l.msg)).toContain('snapshot stream CA loaded');
      expect(loader.ca?.x509.fingerprint256).toBe(winner.ca.x509.fingerprint256);
      const stored = await read<{ data: Record<string, string> }>('secret', 'tollgate-ca', NS);
      expect(Buffer.from(stored.data['ca.crt']!, 'base64').toString()).toBe(winner.ca.certificate);
    });
  });

  describe('leader elector', () => {
    const LEASE = 'tollgate-controller';
    // The test's clock moves only when the test moves it, so the deadline and the expiry come
    // when the test says; renewals come every RETRY_MS of real time.
    const LEASE_MS = 15 * 60_000;
    const DEADLINE_MS = 10 * 60_000;
    const RETRY_MS = 100;
    let clock = 0;
    const lease: Match = { resource: 'leases', namespace: NS, name: LEASE };
    const update: Match = { ...lease, verb: 'update' };
    interface Lease {
      apiVersion: string;
      kind: string;
      spec: { holderIdentity?: string; acquireTime?: string; renewTime?: string; leaseTransitions?: number; leaseDurationSeconds?: number };
    }
    const readLease = () => read<Lease>('lease', LEASE, NS);
    const time = (t: string | undefined) => Date.parse(t ?? '');
    const electors: LeaseElector[] = [];
    const elector = (identity: string) => {
      const { sink, log } = logger();
      const e = new LeaseElector(new KubeLeaseApi(controllerKc()), NS, { enabled: true, leaseName: LEASE, leaseDurationMs: LEASE_MS, renewDeadlineMs: DEADLINE_MS, retryPeriodMs: RETRY_MS, identity }, log, () => clock);
      const changes: boolean[] = [];
      e.onChange((l) => changes.push(l));
      electors.push(e);
      return { e, sink, changes };
    };
    /** Resolves when `e` next becomes leader (true) or stops being leader (false). */
    const turns = (e: LeaseElector, leading: boolean) => new Promise<void>((resolve) => e.onChange((l) => l === leading && resolve()));
    const successes = () => proxy.codes(update).filter((c) => c === 200).length;
    const failed = (sink: LogSink) => warnings(sink, 'leader election: Lease request failed');
    let a: ReturnType<typeof elector>;

    afterAll(async () => {
      for (const e of electors) await e.stop();
    });

    it('takes the free Lease the chart made, and renews it', async () => {
      expect((await readLease()).spec.holderIdentity ?? '').toBe('');
      a = elector('a');
      const leading = turns(a.e, true);
      await a.e.start();
      await leading;
      const taken = await readLease();
      expect(taken.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 1 });
      await proxy.recorded(update, successes() + 2, (r) => r.code === 200);
      const renewed = await readLease();
      expect(renewed.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 1, acquireTime: taken.spec.acquireTime });
      expect(time(renewed.spec.renewTime)).toBeGreaterThan(time(taken.spec.renewTime));
      expect(a.changes).toEqual([true]);
    });

    it('keeps leading through failed renewals (429, 500, 503, resets) within the renew deadline', async () => {
      const before = await readLease();
      const get: Match = { ...lease, verb: 'get' };
      const faults = [
        proxy.rule({ match: get, fault: { kind: 'status', code: 429, retryAfterSeconds: 1 }, times: 1 }),
        proxy.rule({ match: get, fault: { kind: 'status', code: 500 }, times: 1 }),
        proxy.rule({ match: update, fault: { kind: 'status', code: 503 }, times: 1 }),
        proxy.rule({ match: get, fault: { kind: 'reset' }, times: 1 }),
        proxy.rule({ match: update, fault: { kind: 'reset' }, times: 1 }),
      ];
      const failures = failed(a.sink);
      await until(() => faults.every((f) => f.done), { timeoutMs: 30_000, what: 'every planned fault' });
      await proxy.recorded(update, successes() + 1, (r) => r.code === 200);

      expect(failed(a.sink) - failures).toBe(faults.length);
      expect(a.changes).toEqual([true]);
      expect(a.e.isLeader()).toBe(true);
      const after = await readLease();
      expect(after.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 1 });
      expect(time(after.spec.renewTime)).toBeGreaterThan(time(before.spec.renewTime));
    });

    it('stops leading once renewals have failed for the renew deadline, and leads again when they pass', async () => {
      const down = proxy.rule({ match: lease, fault: { kind: 'status', code: 503 } });
      const lost = turns(a.e, false);
      // Once a request has failed, no renewal begun before the rule can still succeed.
      await until(() => down.injected > 0, { what: 'a refused Lease request' });
      clock += DEADLINE_MS;
      // Judged on demand: no longer leader the moment the deadline passes.
      expect(a.e.isLeader()).toBe(false);
      await lost;
      proxy.clearRules();
      const back = turns(a.e, true);
      await back;
      expect(a.changes).toEqual([true, false, true]);
      // Its own Lease, renewed again: no transition.
      expect((await readLease()).spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 1 });
    });

    it('steps down when another holder writes the Lease between its read and its renewal (409)', async () => {
      let theirs: (Lease & Meta) | undefined;
      const hold = proxy.rule({
        match: update,
        times: 1,
        fault: {
          kind: 'hold',
          release: async () => {
            const current = await readLease();
            theirs = await replace({ ...current, spec: { ...current.spec, holderIdentity: 'b', renewTime: new Date().toISOString().replace('Z', '000Z'), leaseTransitions: (current.spec.leaseTransitions ?? 0) + 1 } });
          },
        },
      });
      const failures = failed(a.sink);
      const lost = turns(a.e, false);
      await lost;

      expect(hold.injected).toBe(1);
      expect(theirs?.spec.holderIdentity).toBe('b');
      expect(proxy.codes(update).at(-1)).toBe(409);
      // A lost race, not a failure.
      expect(failed(a.sink)).toBe(failures);
      expect(a.changes).toEqual([true, false, true, false]);
      // A follower now: it reads the Lease and never writes it while b's is valid.
      const writes = proxy.count(update);
      await proxy.recorded({ ...lease, verb: 'get' }, proxy.count({ ...lease, verb: 'get' }) + 3);
      expect(proxy.count(update)).toBe(writes);
      expect(a.e.isLeader()).toBe(false);
      expect((await readLease()).metadata.resourceVersion).toBe(theirs!.metadata.resourceVersion);
    });

    it('two followers take over the expired Lease: one wins, the other\'s update meets 409', async () => {
      const before = await readLease();
      expect(before.spec.holderIdentity).toBe('b');
      const c = elector('c');
      await c.e.start();
      // Both have seen b's record before the clock moves.
      await until(() => c.e.lease?.spec?.holderIdentity === 'b' && a.e.lease?.spec?.holderIdentity === 'b', { what: 'both followers read the Lease' });
      const oks = successes();
      // Whichever update comes first waits until the other's has landed.
      const hold = proxy.rule({ match: update, times: 1, fault: { kind: 'hold', release: () => proxy.recorded(update, oks + 1, (r) => r.code === 200) } });
      const refused = proxy.codes(update).filter((x) => x === 409).length;
      const failures = failed(a.sink) + failed(c.sink);
      const someone = Promise.race([turns(a.e, true), turns(c.e, true)]);
      clock += LEASE_MS;
      await someone;
      await proxy.recorded(update, refused + 1, (r) => r.code === 409);

      expect(hold.injected).toBe(1);
      const [winner, loser] = a.e.isLeader() ? [a, c] : [c, a];
      expect(winner.e.isLeader()).toBe(true);
      expect(loser.e.isLeader()).toBe(false);
      // The loser's next round reads the winner's record: its refused update is behind it, a lost race, not a failure.
      await until(() => loser.e.lease?.spec?.holderIdentity === winner.e.identity, { what: 'the loser to read the winner\'s Lease' });
      expect(failed(a.sink) + failed(c.sink)).toBe(failures);
      const after = await readLease();
      expect(after.spec.holderIdentity).toBe(winner.e.identity);
      expect(after.spec.leaseTransitions).toBe((before.spec.leaseTransitions ?? 0) + 1);
      expect(time(after.spec.acquireTime)).toBeGreaterThan(time(before.spec.acquireTime));
      // The loser stays a follower while the winner renews.
      await proxy.recorded(update, successes() + 2, (r) => r.code === 200);
      expect(loser.e.isLeader()).toBe(false);
      expect((await readLease()).spec.holderIdentity).toBe(winner.e.identity);
    });
  });
});
