// The controller process: its stages wired together, each a named object with a typed input
// and output (runtime/channels.ts). Every replica watches, translates and serves its admin,
// metrics and health endpoints and the snapshot stream; only the leader writes status and runs
// the deployer (the proxies of each Gateway).
//
//   watch (stages/watch-stage.ts) ──changes──> translate (stages/translate-stage.ts)
//     ──snapshots──> store ──> snapshot stream (snapshots/stream-server.ts) ──> proxies
//     ──reports──> status writer (status/writer.ts) and deploy stage (stages/deploy-stage.ts)
//   proxies' pods, ACKs and NACKs, name conflicts ──proxiesChanged──> the proxies' view
//     (stages/proxies-view.ts) ──> status writer: Programmed, without a new translation
import type { RetryOptions } from './runtime/retry-backoff.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { AdminServer } from './admin/server.js';
import { KubeDeployerApi } from './deployer/api.js';
import { Deployer } from './deployer/deployer.js';
import { OwnedObjects } from './deployer/owned-watch.js';
import { ProxyPods } from './deployer/proxy-pods.js';
import { EventRecorder } from './events/recorder.js';
import { healthServer } from './health/server.js';
import type { Logs } from './log/components.js';
import { ControllerMetrics } from './metrics/metrics.js';
import { metricsServer } from './metrics/server.js';
import type { ControllerOptions } from './options.js';
import { DEFAULT_PROXY_SETTINGS } from './proxy-settings/defaults.js';
import { GatewaySettings } from './proxy-settings/gateway-settings.js';
import { parseAllowList } from './proxy-settings/image-policy.js';
import type { DebounceOptions } from './queue/debounced-queue.js';
import { Signal, Topic } from './runtime/channels.js';
import { Manager } from './runtime/manager.js';
import type { Runnable } from './runtime/runnable.js';
import { SnapshotStore, type SnapshotCheck } from './snapshots/store.js';
import { StreamMetrics } from './snapshots/stream-metrics.js';
import { SnapshotStreamServer } from './snapshots/stream-server.js';
import { ControllerEvents } from './stages/controller-events.js';
import { DeployStage } from './stages/deploy-stage.js';
import { Leadership } from './stages/leadership.js';
import { ClusterProxiesView } from './stages/proxies-view.js';
import { streamSecurity, type SecuredStream } from './stages/stream-security.js';
import { TranslateStage } from './stages/translate-stage.js';
import { WatchStage } from './stages/watch-stage.js';
import { KubeStatusApi } from './status/api.js';
import { StatusWriter } from './status/writer.js';
import type { StatusReport, Translate } from './translate/types.js';

export interface ControllerDeps {
  readonly options: ControllerOptions;
  readonly kc: KubeConfig;
  readonly logs: Logs;
  readonly translate: Translate;
  readonly checkSnapshot?: SnapshotCheck;
  readonly queue?: DebounceOptions;
  readonly watchBackoff?: RetryOptions;
}

export class Controller {
  readonly metrics = new ControllerMetrics();
  readonly store: SnapshotStore;
  readonly leadership: Leadership;
  readonly watch: WatchStage;
  readonly translate: TranslateStage;
  readonly stream: SnapshotStreamServer;
  readonly secured: SecuredStream;
  readonly proxyPods: ProxyPods;
  readonly deployer: Deployer;
  readonly ownedObjects: OwnedObjects;
  readonly writer: StatusWriter;
  readonly admin: AdminServer;
  /** A watched object changed: translate again. */
  readonly #changes = new Signal();
  /** Something the proxies' view reads changed: write the Gateways' status again. */
  readonly #proxiesChanged = new Signal();
  /** An object's status alone changed in the cache: the status writer reads it again. */
  readonly #statusChanged = new Signal();
  readonly #manager: Manager;

  constructor(d: ControllerDeps) {
    const { options: o, kc, logs } = d;
    const gwc = logs.get('gateway-controller');
    this.store = new SnapshotStore(d.checkSnapshot);
    this.leadership = new Leadership(kc, o, this.metrics, gwc);
    const recorder = new EventRecorder(kc, o.controllerName, o.leaderElection.identity, this.leadership.isLeader, gwc);
    this.watch = new WatchStage({ kc, controllerName: o.controllerName, metrics: this.metrics, log: logs.get('tollgate/syncer'), events: recorder, changes: this.#changes, statusChanges: this.#statusChanged, backoff: d.watchBackoff });
    const cache = this.watch.cache;
    const events = new ControllerEvents(recorder, cache, o.leaderElection.identity);
    this.leadership.announce(events);

    const allowList = parseAllowList(o.gatewayProxyImages);
    const settings = new GatewaySettings(cache, { defaults: DEFAULT_PROXY_SETTINGS, gatewayImages: allowList.ok ? allowList.list : [], infrastructureDenied: o.gatewayInfrastructureDeniedDomains });
    this.proxyPods = new ProxyPods(kc, this.#proxiesChanged.raise, logs.get('deployer'));
    const deployerParams = { proxyImage: o.proxyImage, snapshotService: o.snapshotService, defaults: DEFAULT_PROXY_SETTINGS, plaintext: o.snapshotPlaintext };
    // A name taken or an address refused, or that over: Programmed says so.
    this.deployer = new Deployer({
      api: new KubeDeployerApi(kc),
      params: deployerParams,
      isLeader: this.leadership.isLeader,
      log: logs.get('deployer'),
      onProblem: events.invalidProxySettings,
      onBlockedChange: this.#proxiesChanged.raise,
      watchEpoch: () => this.ownedObjects.epoch,
    });
    this.ownedObjects = new OwnedObjects(kc, (kind, event, obj) => this.deployer.observed(kind, event, obj), logs.get('deployer'));

    const streamMetrics = new StreamMetrics(this.metrics.registry);
    this.secured = streamSecurity({ kc, options: o, cache, metrics: streamMetrics, proxiesChanged: this.#proxiesChanged, log: gwc, publisherLog: logs.get('deployer') });
    this.stream = new SnapshotStreamServer({
      addr: o.snapshotAddr,
      security: this.secured.security,
      store: this.store,
      metrics: streamMetrics,
      limits: o.streamLimits,
      log: gwc,
      onNack: events.snapshotRejected,
      // A NACK, or its end, changes Programmed only: no translation.
      onRejectionChange: this.#proxiesChanged.raise,
      onProxiesChange: this.#proxiesChanged.raise,
      listening: this.#listening(logs, 'snapshot stream'),
    });

    const proxies = new ClusterProxiesView({ cache, settings, store: this.store, pods: this.proxyPods, deployer: this.deployer, caPublisher: this.secured.caPublisher, stream: this.stream, changed: this.#proxiesChanged });
    this.writer = new StatusWriter({ api: new KubeStatusApi(kc), cache: (kind, name, namespace) => this.watch.world.get(kind, name, namespace), cacheChanges: { count: (kind) => this.watch.world.changes(kind).count, since: (kind, n) => this.watch.world.changes(kind).since(n) }, controllerName: o.controllerName, isLeader: this.leadership.isLeader, metrics: this.metrics, log: gwc, proxies });
    this.#statusChanged.listen(() => this.writer.recheck());
    const reports = new Topic<StatusReport>(this.writer, new DeployStage(cache, settings, this.deployer, this.secured.caPublisher));
    this.translate = new TranslateStage({
      source: this.watch.world,
      changes: this.#changes,
      statusChanges: this.#statusChanged,
      translate: d.translate,
      controllerName: o.controllerName,
      limits: o.limits,
      gatewayProxyImages: o.gatewayProxyImages,
      gatewayInfrastructureDeniedDomains: o.gatewayInfrastructureDeniedDomains,
      gatewayApiVersion: () => this.watch.gatewayApiVersion.value,
      store: this.store,
      reports,
      metrics: this.metrics,
      log: logs.get('tollgate/translator'),
      queue: d.queue,
    });
    this.admin = new AdminServer(o.adminAddr, logs, this.store, this.#listening(logs, 'admin'), () => this.stream.proxies());
    this.#manager = new Manager(logs.get('default'), this.leadership.source);
    for (const r of this.#runnables(o, logs)) this.#manager.add(r);
  }

  /** In start order (stopped in reverse); the leader's run only while this replica leads. */
  #runnables(o: ControllerOptions, logs: Logs): Runnable[] {
    const { ca, caPublisher } = this.secured;
    const elector = this.leadership.elector;
    return [
      healthServer(o.healthAddr, { notReady: () => this.watch.world.unsynced().map((k) => `${k} not synced`) }, this.#listening(logs, 'health')),
      metricsServer(o.metricsAddr, this.metrics, this.#listening(logs, 'metrics')),
      this.admin,
      this.proxyPods,
      this.watch,
      this.translate,
      // After the watch: authorizing a proxy looks its Gateway up in the caches.
      ...(ca ? [ca] : []),
      this.stream,
      ...(elector ? [elector] : []),
      this.writer,
      this.deployer,
      this.ownedObjects,
      ...(caPublisher ? [caPublisher] : []),
    ];
  }

  #listening(logs: Logs, what: string): (address: string) => void {
    return (address) => logs.get('default').info({ address }, `${what} listening`);
  }

  start(): Promise<void> {
    return this.#manager.start();
  }

  stop(): Promise<void> {
    return this.#manager.stop();
  }
}
