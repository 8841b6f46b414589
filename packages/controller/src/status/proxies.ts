// What the status writer reads of the proxies: one read-only view of a Gateway's proxies,
// their pods as the deployer's watch holds them, the snapshot stream's ACKs and NACKs, the
// Service the deployer made, and why they cannot be deployed at all. controller.ts provides it
// (stages/proxies-view.ts); its `changed` signal makes the writer merge the Gateways again
// without a new translation.
import type { V1Pod } from '@kubernetes/client-node';
import type { Signal } from '../runtime/channels.js';

export interface ConnectedProxy {
  readonly pod: string;
  /** The version the proxy last ACKed; null: none yet. */
  readonly ackedVersion: string | null;
}

export interface ProgrammedInput {
  /** The Deployment running the Gateway's proxies. */
  readonly deployment: string;
  /** Why the proxies cannot be deployed at all (an object of their name is someone else's). */
  readonly blocked?: string;
  /** What the requested addresses (spec.addresses) decide, while they are not all on the Service. */
  readonly address?: { readonly reason: 'AddressNotUsable' | 'AddressNotAssigned'; readonly message: string };
  readonly replicas: number;
  /** How to raise replicas from 0, where they were set (an annotation or a parameters key). */
  readonly replicasHint?: string;
  /** The Gateway's proxy pods (by the deployer's labels). */
  readonly pods: readonly V1Pod[];
  /** The Gateway's current snapshot version; undefined: none (yet). */
  readonly version: string | undefined;
  readonly proxies: readonly ConnectedProxy[];
}

/** A proxy's refusal of the Gateway's current snapshot, while it stands. */
export interface Rejection {
  readonly version: string;
  readonly pod: string;
  readonly error: string;
}

export interface GatewayAddress {
  readonly type: string;
  readonly value: string;
}

export interface ProxiesView {
  /** Raised whenever anything below may read differently. */
  readonly changed: Signal;
  /** `gateway`: `<namespace>/<name>`. */
  rejection(gateway: string): Rejection | undefined;
  /** What Programmed is drawn from; undefined when the Gateway is not known (yet). */
  programmedInput(namespace: string, name: string): ProgrammedInput | undefined;
  /** Gateway status.addresses: the addresses of the proxies' Service, [] while it has none. */
  addresses(namespace: string, name: string): readonly GatewayAddress[];
  /** Resolves once no snapshot push to a proxy awaits its answer, or after `maxMs` (at once when none does). */
  delivered?(maxMs: number): Promise<void>;
}
