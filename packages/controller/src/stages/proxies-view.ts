// The one read-only view of the proxies the status writer reads (status/proxies.ts): the
// deployer's pods, Services, name conflicts and refused addresses, the CA publisher's
// conflicts and the snapshot stream's ACKs and NACKs. Every source of change raises `changed` (the wiring hands it out).
import type { V1Pod } from '@kubernetes/client-node';
import { addressVerdict, gatewayAddresses, type AddressRefusal } from '../deployer/addresses.js';
import { proxyName } from '../deployer/names.js';
import type { GatewaySettings } from '../proxy-settings/gateway-settings.js';
import type { Signal } from '../runtime/channels.js';
import type { SnapshotStore } from '../snapshots/store.js';
import type { ProxyView } from '../snapshots/stream-server.js';
import type { ProgrammedInput } from '../status/programmed.js';
import type { GatewayAddress, ProxiesView, Rejection } from '../status/proxies.js';
import type { CacheLookup } from '../watch/lookup.js';

export interface ProxySources {
  readonly cache: CacheLookup;
  readonly settings: GatewaySettings;
  readonly store: SnapshotStore;
  /** The deployer's watch of the proxy pods. */
  readonly pods: { of(namespace: string, gateway: string): V1Pod[] };
  readonly deployer: { conflict(namespace: string, name: string): string | undefined; addressRefusal(namespace: string, name: string): AddressRefusal | undefined };
  /** null with --snapshot-plaintext. */
  readonly caPublisher: { conflict(namespace: string): string | undefined } | null;
  readonly stream: { proxies(): ReadonlyMap<string, readonly ProxyView[]>; rejection(gateway: string): Rejection | undefined; answered(maxMs: number): Promise<void> };
  readonly changed: Signal;
}

export class ClusterProxiesView implements ProxiesView {
  readonly changed: Signal;

  constructor(private readonly s: ProxySources) {
    this.changed = s.changed;
  }

  rejection(gateway: string): Rejection | undefined {
    return this.s.stream.rejection(gateway);
  }

  delivered(maxMs: number): Promise<void> {
    return this.s.stream.answered(maxMs);
  }

  programmedInput(namespace: string, name: string): ProgrammedInput | undefined {
    const gw = this.s.cache.gateway(namespace, name);
    if (!gw) return undefined;
    const key = `${namespace}/${name}`;
    const { replicas, hint } = this.s.settings.replicas(gw);
    const blocked = this.s.deployer.conflict(namespace, name) ?? this.s.caPublisher?.conflict(namespace);
    const address = addressVerdict(gw, (svc, ns) => this.s.cache.service(svc, ns), this.s.deployer.addressRefusal(namespace, name));
    return {
      deployment: proxyName(gw),
      ...(blocked === undefined ? {} : { blocked }),
      ...(address === undefined ? {} : { address }),
      replicas,
      ...(hint === undefined ? {} : { replicasHint: hint }),
      pods: this.s.pods.of(namespace, name),
      version: this.s.store.get(key)?.version,
      proxies: (this.s.stream.proxies().get(key) ?? []).map((p) => ({ pod: p.pod, ackedVersion: p.ackedVersion })),
    };
  }

  addresses(namespace: string, name: string): readonly GatewayAddress[] {
    const gw = this.s.cache.gateway(namespace, name);
    return gw ? gatewayAddresses(gw, (svc, ns) => this.s.cache.service(svc, ns)) : [];
  }
}
