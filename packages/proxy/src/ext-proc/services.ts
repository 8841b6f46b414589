// The external processors' channels, made once per process: one gRPC channel per address,
// shared by every policy and config naming it, connected as soon as a config naming it is
// compiled, closed when no config in force names it (retain, after each apply) and on
// shutdown. The processor's messages (protobuf) are loaded by the first config that names one.
import type { PolicyIR, ListedPolicies } from '@tollgate/api';
import { extProcProtos } from './proto.js';
import type * as Stream from './stream.js';

type ExtProcClient = Stream.ExtProcClient;

export class ExtProcServices {
  #module: Promise<typeof Stream> | null = null;
  readonly #clients = new Map<string, ExtProcClient>();
  #closed = false;

  /**
   * Loads the processor's messages, for a config naming a processor that is being
   * compiled: throws TG_MODULE_UNAVAILABLE (the config is refused) when they cannot be loaded.
   */
  load(): void {
    extProcProtos();
  }

  /** Starts connecting to a processor a compiled config names. */
  prepare(address: string): void {
    void this.client(address).catch(() => {});
  }

  async client(address: string): Promise<ExtProcClient> {
    const m = await (this.#module ??= import('./stream.js'));
    if (this.#closed) throw new Error('the proxy is shutting down');
    let c = this.#clients.get(address);
    if (!c) this.#clients.set(address, (c = new m.ExtProcClient(address)));
    return c;
  }

  addresses(): string[] {
    return [...this.#clients.keys()];
  }

  /** Each processor's channel and whether it is connected now (a metric, read at each scrape). */
  states(): { address: string; connected: boolean }[] {
    return [...this.#clients].map(([address, c]) => ({ address, connected: c.connectedNow }));
  }

  /** Closes the channels of processors the config in force no longer names; a stream open on one fails into its failure mode. */
  retain(inUse: ReadonlySet<string>): void {
    for (const [address, c] of this.#clients) {
      if (inUse.has(address)) continue;
      c.close();
      this.#clients.delete(address);
    }
  }

  close(): void {
    this.#closed = true;
    this.retain(new Set());
  }
}

/** Every processor address the snapshot names, of the policies it lists (ListedPolicies, @tollgate/api). */
export function extProcServicesInUse(policies: ListedPolicies): Set<string> {
  const out = new Set<string>();
  const note = (p: PolicyIR): void => {
    if (p.extProc) out.add(p.extProc.service);
  };
  for (const p of policies.gateway) note(p);
  for (const p of policies.route) note(p);
  return out;
}
