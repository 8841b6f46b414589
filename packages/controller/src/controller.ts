// The controller process: its runnables wired together. Every replica watches, translates and
// serves its admin, metrics and health endpoints and the snapshot stream; only the leader
// writes status and runs the deployer (the proxies of each Gateway).
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { AdminServer } from './admin/server.js';
import { EventRecorder } from './events/recorder.js';
import { healthServer } from './health/server.js';
import { GatewayApiVersion } from './kube/gateway-api-version.js';
import { gatewayAddresses } from './deployer/addresses.js';
import { KubeDeployerApi } from './deployer/api.js';
import { Deployer } from './deployer/deployer.js';
import { ANNOTATION_PREFIX, readOverrides, type ProxySettings } from './proxy-settings/overrides.js';
import { parseAllowList } from './proxy-settings/image-policy.js';
import { gatewayParameters, type ParameterPolicy } from './proxy-settings/parameters.js';
import { programmed } from './deployer/programmed.js';
import { OwnedObjects } from './deployer/owned-watch.js';
import { ProxyPods } from './deployer/proxy-pods.js';
import { DEFAULT_PROXY_SETTINGS } from './proxy-settings/defaults.js';
import { KubeLeaseApi, LeaseElector, NoElection } from './leader/elector.js';
import type { Logs } from './log/components.js';
import { ControllerMetrics } from './metrics/metrics.js';
import { metricsServer } from './metrics/server.js';
import type { ControllerOptions } from './options.js';
import { DebouncedQueue, type DebounceOptions } from './queue/debounced-queue.js';
import { Reconciler } from './reconcile/reconciler.js';
import { Manager, type LeadershipSource } from './runtime/manager.js';
import type { Runnable } from './runtime/runnable.js';
import { SnapshotStore, type SnapshotCheck } from './snapshots/store.js';
import { StreamMetrics } from './snapshots/stream-metrics.js';
import { SnapshotStreamServer, type NackReport, type StreamSecurity } from './snapshots/stream-server.js';
import { TokenReviewAuthenticator } from './snapshots/stream-auth.js';
import { CachingTokenReviewer, KubeTokenReviewer } from './snapshots/token-review.js';
import { proxyName } from './deployer/names.js';
import { CaLoader } from './pki/ca-loader.js';
import { CaPublisher, KubeConfigMapApi } from './pki/ca-publisher.js';
import { KubeCaSecretApi } from './pki/ca-secret.js';
import { servingNames } from './pki/names.js';
import { parseHostPort } from './options.js';
import { KubeStatusApi } from './status/api.js';
import { StatusWriter } from './status/writer.js';
import { referencedObjects } from './translate/references.js';
import type { StatusReport, Translate } from './translate/types.js';
import type { Gateway, GatewayClass } from './types/gateway-api.js';
import type { BackoffOptions } from './watch/informer.js';
import { World } from './watch/world.js';

export interface ControllerDeps {
  readonly options: ControllerOptions;
  readonly kc: KubeConfig;
  readonly logs: Logs;
  readonly translate: Translate;
  readonly checkSnapshot?: SnapshotCheck;
  readonly queue?: DebounceOptions;
  readonly watchBackoff?: BackoffOptions;
}

export class Controller {
  readonly metrics = new ControllerMetrics();
  readonly store: SnapshotStore;
  readonly world: World;
  readonly writer: StatusWriter;
  readonly deployer: Deployer;
  readonly proxyPods: ProxyPods;
  readonly ownedObjects: OwnedObjects;
  readonly queue: DebouncedQueue;
  readonly leadership: LeadershipSource;
  readonly admin: AdminServer;
  readonly stream: SnapshotStreamServer;
  /** The stream's CA and serving certificate; null with --snapshot-plaintext. */
  readonly ca: CaLoader | null;
  /** Publishes the CA certificate to each Gateway namespace (leader); null with --snapshot-plaintext. */
  readonly caPublisher: CaPublisher | null;
  readonly #manager: Manager;

  constructor(d: ControllerDeps) {
    const { options: o, kc, logs } = d;
    const general = logs.get('default');
    const syncer = logs.get('tollgate/syncer');
    const translator = logs.get('tollgate/translator');
    const gwc = logs.get('gateway-controller');

    this.store = new SnapshotStore(d.checkSnapshot);
    const gatewayApiVersion = new GatewayApiVersion(kc, syncer, () => this.queue.add());
    const elector = o.leaderElection.enabled ? new LeaseElector(new KubeLeaseApi(kc), o.namespace, o.leaderElection, gwc) : undefined;
    this.leadership = elector ?? new NoElection();
    this.metrics.leader.set(this.leadership.isLeader() ? 1 : 0);
    const events = new EventRecorder(kc, o.controllerName, o.leaderElection.identity, () => this.leadership.isLeader(), gwc);
    this.leadership.onChange((leader) => {
      this.metrics.leader.set(leader ? 1 : 0);
      const lease = elector?.lease;
      if (leader && lease) events.record({ ...lease, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' }, 'Normal', 'LeaderElection', 'Acquire', `${o.leaderElection.identity} became leader`);
    });

    this.world = new World(
      kc,
      {
        changed: () => {
          this.queue.add();
          this.metrics.queueDepth.set(this.queue.depth);
        },
        restarted: (kind) => this.metrics.watchRestarts.inc({ kind: kind.kind }),
        synced: (kind) => {
          this.metrics.watchSynced.set({ kind: kind.kind }, 1);
          syncer.info({ kind: kind.kind, objects: this.world.informer(kind.kind).list().length }, 'cache synced');
        },
      },
      syncer,
      (r) => referencedObjects(r, o.controllerName),
      d.watchBackoff,
      (kind, obj, why) => events.record({ ...obj, apiVersion: kind.group ? `${kind.group}/${kind.version}` : kind.version, kind: kind.kind }, 'Warning', 'Unreadable', 'Skip', `skipped by ${o.controllerName}: ${why}`),
    );

    this.metrics.cacheStats = () => this.world.cacheStats();
    const cachedGateway = (namespace: string, name: string) => this.world.get('Gateway', name, namespace) as Gateway | undefined;
    // A Gateway's proxy parameters: its class's ConfigMap, then its own (translation refuses
    // the Gateway when they cannot be read, or choose what only the cluster admin may).
    const allowList = parseAllowList(o.gatewayProxyImages);
    const policy: ParameterPolicy = { defaults: DEFAULT_PROXY_SETTINGS, gatewayImages: allowList.ok ? allowList.list : [] };
    const parameters = (gw: Gateway) =>
      gatewayParameters(
        gw,
        this.world.get('GatewayClass', gw.spec.gatewayClassName) as GatewayClass | undefined,
        (namespace, name) => this.world.get('ConfigMap', name, namespace),
        policy,
      );
    this.proxyPods = new ProxyPods(kc, () => this.writer.refresh(), logs.get('deployer'));
    this.writer = new StatusWriter(
      new KubeStatusApi(kc),
      (kind, name, namespace) => this.world.get(kind, name, namespace),
      o.controllerName,
      () => this.leadership.isLeader(),
      this.metrics,
      gwc,
      undefined,
      (namespace, name) => {
        const gw = cachedGateway(namespace, name);
        return gw ? gatewayAddresses(gw, (svc, ns) => this.world.get('Service', svc, ns)) : [];
      },
      (namespace, name) => {
        const gw = cachedGateway(namespace, name);
        if (!gw) return undefined;
        const key = `${namespace}/${name}`;
        const params = parameters(gw);
        const annotated = gw.spec.infrastructure?.annotations?.[`${ANNOTATION_PREFIX}replicas`] !== undefined;
        const blocked = this.deployer.conflict(namespace, name) ?? this.caPublisher?.conflict(namespace);
        return programmed({
          deployment: proxyName(gw),
          ...(blocked === undefined ? {} : { blocked }),
          replicas: readOverrides(gw.spec.infrastructure?.annotations, params.ok ? params.settings : DEFAULT_PROXY_SETTINGS).settings.replicas,
          ...(params.ok && params.sources.length && !annotated ? { replicasHint: `set replicas above 0 in ConfigMap ${params.sources.join(' or ')}` } : {}),
          pods: this.proxyPods.of(namespace, name),
          version: this.store.get(key)?.version,
          proxies: (this.stream.proxies().get(key) ?? []).map((p) => ({ pod: p.pod, ackedVersion: p.ackedVersion })),
        });
      },
    );
    this.deployer = new Deployer(
      new KubeDeployerApi(kc),
      { proxyImage: o.proxyImage, snapshotService: o.snapshotService, defaults: DEFAULT_PROXY_SETTINGS, plaintext: o.snapshotPlaintext },
      () => this.leadership.isLeader(),
      logs.get('deployer'),
      undefined,
      undefined,
      // Where a user looks first: `kubectl describe gateway` shows it.
      (gw, problem) => events.record(gw as unknown as KubernetesObject, 'Warning', 'InvalidProxySettings', 'Deploy', problem),
      // A name taken, or free again: Programmed says so.
      () => this.writer.refresh(),
    );
    this.ownedObjects = new OwnedObjects(kc, (kind, event, obj) => this.deployer.observed(kind, event, obj), logs.get('deployer'));
    // The deployer runs proxies for the Gateways translation accepted (the class is ours and
    // the Gateway itself is valid); a Gateway no longer accepted loses them, except one refused
    // for its parameters: a typo in a ConfigMap keeps the proxies running as they are.
    const withAccepted = (r: StatusReport, test: (c: { status: string; reason: string }) => boolean): Gateway[] =>
      [...r.gateways.values()]
        .filter((g) => g.conditions.some((c) => c.type === 'Accepted' && test(c)))
        .map((g) => cachedGateway(g.namespace, g.name))
        .filter((g): g is Gateway => g !== undefined);
    const deployTargets = (r: StatusReport) => {
      const deploy: Gateway[] = [];
      const keep = withAccepted(r, (c) => c.status === 'False' && c.reason === 'InvalidParameters');
      const settings = new Map<Gateway, ProxySettings>();
      for (const gw of withAccepted(r, (c) => c.status === 'True')) {
        const p = parameters(gw);
        // A ConfigMap changed since translation: the next reconcile (its watch) decides.
        if (!p.ok) keep.push(gw);
        else {
          deploy.push(gw);
          settings.set(gw, p.settings);
        }
      }
      return { deploy, keep, settings: (gw: Gateway) => settings.get(gw) ?? DEFAULT_PROXY_SETTINGS };
    };

    const reconciler = new Reconciler({
      resources: () => this.world.resources(),
      translate: d.translate,
      controllerName: o.controllerName,
      limits: o.limits,
      gatewayProxyImages: o.gatewayProxyImages,
      gatewayApiVersion: () => gatewayApiVersion.value,
      store: this.store,
      submitStatus: (r) => {
        this.writer.submit(r);
        const { deploy, keep, settings } = deployTargets(r);
        this.deployer.submit(deploy, { keep, settings });
        // Kept proxies reconnect too: they need the CA.
        this.caPublisher?.submit([...deploy, ...keep]);
      },
      metrics: this.metrics,
      log: translator,
      rejection: (gateway) => this.stream.rejection(gateway),
    });
    this.queue = new DebouncedQueue(
      () => {
        // Until every cache has synced, a translation would see a partial world and report
        // objects as missing; the first run happens once the last kind has synced.
        if (!this.world.synced) return;
        reconciler.run();
        this.metrics.queueDepth.set(this.queue.depth);
      },
      (err) => translator.error({ err: String(err) }, 'reconcile failed'),
      d.queue,
    );

    const listening = (what: string) => (address: string) => general.info({ address }, `${what} listening`);
    const onNack = (r: NackReport) => {
      const [namespace, name] = r.gateway.split('/') as [string, string];
      const gateway = this.world.get('Gateway', name, namespace);
      if (gateway) events.record({ ...gateway, apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway' }, 'Warning', 'SnapshotRejected', 'Apply', `proxy ${r.pod} refused snapshot ${r.version}: ${r.error}`);
    };
    const streamMetrics = new StreamMetrics(this.metrics.registry);
    let security: StreamSecurity;
    if (o.snapshotPlaintext) {
      gwc.warn('the snapshot stream is served without TLS or authentication (--snapshot-plaintext): for development only');
      this.ca = null;
      this.caPublisher = null;
      security = { kind: 'plaintext' };
    } else {
      const publisher = new CaPublisher(new KubeConfigMapApi(kc), logs.get('deployer'), undefined, () => this.writer.refresh());
      const ca = new CaLoader({
        api: new KubeCaSecretApi(kc),
        namespace: o.namespace,
        secret: o.snapshotCaSecret,
        names: servingNames(parseHostPort(o.snapshotService, '--snapshot-service').host, o.snapshotTlsNames),
        log: gwc,
        loaded: (c) => publisher.setCertificate(c.certificate),
      });
      this.ca = ca;
      this.caPublisher = publisher;
      // The proxies of a Gateway run as the ServiceAccount the deployer names for it.
      const expected = (gateway: string) => {
        const [namespace, name] = gateway.split('/') as [string, string];
        const gw = cachedGateway(namespace, name);
        if (!gw) return `the controller knows no Gateway ${gateway}`;
        return { namespace, name: proxyName(gw) };
      };
      const reviewer = new CachingTokenReviewer(new KubeTokenReviewer(kc), {
        // A result is not trusted for longer than a stream goes without a re-check.
        positiveTtlMs: Math.min(60_000, o.streamLimits.reauthIntervalMs),
        reviewsPerSecond: o.tokenReviewsPerSecond,
        counted: (result) => streamMetrics.tokenReviews.inc({ result }),
      });
      security = { kind: 'tls', credentials: () => ca.serving.serverCredentials(), auth: new TokenReviewAuthenticator(reviewer, expected) };
    }
    this.stream = new SnapshotStreamServer({ addr: o.snapshotAddr, security, store: this.store, metrics: streamMetrics, limits: o.streamLimits, log: gwc, onNack, onRejectionChange: () => this.queue.add(), onProxiesChange: () => this.writer.refresh(), listening: listening('snapshot stream') });
    const stream = this.stream;
    this.admin = new AdminServer(o.adminAddr, logs, this.store, listening('admin'), () => stream.proxies());
    this.#manager = new Manager(general, this.leadership);
    const runnables: Runnable[] = [
      healthServer(o.healthAddr, { notReady: () => this.world.unsynced().map((k) => `${k} not synced`) }, listening('health')),
      metricsServer(o.metricsAddr, this.metrics, listening('metrics')),
      this.admin,
      this.proxyPods,
      {
        name: 'watch',
        needsLeader: false,
        start: async () => {
          // Each resolves once it has made its first attempt; failures retry in the background.
          await gatewayApiVersion.start();
          await this.world.start();
        },
        stop: async () => {
          await gatewayApiVersion.stop();
          await this.world.stop();
        },
      },
      { name: 'translate', needsLeader: false, start: async () => undefined, stop: () => this.queue.stop() },
      // After the watch: authorizing a proxy looks its Gateway up in the caches.
      ...(this.ca ? [this.ca] : []),
      stream,
      ...(elector ? [elector] : []),
      this.writer,
      this.deployer,
      this.ownedObjects,
      ...(this.caPublisher ? [this.caPublisher] : []),
    ];
    for (const r of runnables) this.#manager.add(r);
  }

  start(): Promise<void> {
    return this.#manager.start();
  }

  stop(): Promise<void> {
    return this.#manager.stop();
  }
}
