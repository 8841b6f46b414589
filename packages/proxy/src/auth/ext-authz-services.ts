// The clients of the external authorization services, made once per process (AuthDeps): one
// gRPC channel or one HTTP connection pool per service address, shared by every policy and
// every config that names it, connected as soon as a config naming it is compiled, closed when
// no config in force names it any more (retain, after each apply) and on shutdown. The gRPC
// module (with protobuf) is loaded by the first config that names a gRPC service.
import type { ExtAuthzIR, PolicyIR, ListedPolicies } from '@tollgate/api';
import type * as GrpcProtocol from './ext-authz-grpc.js';
import { extAuthzProtos } from './ext-authz-proto.js';
import { ExtAuthzHttpClient } from './ext-authz-http.js';

type GrpcModule = typeof GrpcProtocol;
type ExtAuthzGrpcClient = GrpcProtocol.ExtAuthzGrpcClient;

const key = (ir: Pick<ExtAuthzIR, 'protocol' | 'service'>): string => `${ir.protocol} ${ir.service}`;

export class ExtAuthzServices {
  #grpcModule: Promise<GrpcModule> | null = null;
  readonly #grpc = new Map<string, ExtAuthzGrpcClient>();
  readonly #http = new Map<string, ExtAuthzHttpClient>();
  #closed = false;

  /**
   * Starts connecting to the policy's service (a config naming it is being compiled); for a
   * gRPC service, first loads its messages, so a config whose modules cannot be
   * loaded is refused (TG_MODULE_UNAVAILABLE) instead of failing its requests.
   */
  prepare(ir: ExtAuthzIR): void {
    if (ir.protocol === 'GRPC') {
      extAuthzProtos();
      void this.grpc(ir.service).catch(() => {});
    }
    else this.http(ir.service);
  }

  async grpc(address: string): Promise<ExtAuthzGrpcClient> {
    const m = await (this.#grpcModule ??= import('./ext-authz-grpc.js'));
    if (this.#closed) throw new Error('the proxy is shutting down');
    let c = this.#grpc.get(address);
    if (!c) this.#grpc.set(address, (c = new m.ExtAuthzGrpcClient(address)));
    return c;
  }

  http(address: string): ExtAuthzHttpClient {
    if (this.#closed) throw new Error('the proxy is shutting down');
    let c = this.#http.get(address);
    if (!c) this.#http.set(address, (c = new ExtAuthzHttpClient(address)));
    return c;
  }

  /** Open clients, as `<protocol> <address>` (config dump, tests). */
  addresses(): string[] {
    return [...[...this.#grpc.keys()].map((a) => `GRPC ${a}`), ...[...this.#http.keys()].map((a) => `HTTP ${a}`)];
  }

  /** Closes the clients of services the config in force no longer names; a call in flight on one fails into its failure mode. */
  retain(inUse: ReadonlySet<string>): void {
    for (const [address, c] of this.#grpc) {
      if (inUse.has(`GRPC ${address}`)) continue;
      c.close();
      this.#grpc.delete(address);
    }
    for (const [address, c] of this.#http) {
      if (inUse.has(`HTTP ${address}`)) continue;
      void c.close().catch(() => {});
      this.#http.delete(address);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.retain(new Set());
  }
}

/** Every authorization service the snapshot names, as `<protocol> <address>`, of the policies it lists (ListedPolicies, @tollgate/api). */
export function extAuthzServicesInUse(policies: ListedPolicies): Set<string> {
  const out = new Set<string>();
  const note = (p: PolicyIR): void => {
    if (p.extAuthz) out.add(key(p.extAuthz));
  };
  for (const p of policies.gateway) note(p);
  for (const p of policies.route) note(p);
  return out;
}
