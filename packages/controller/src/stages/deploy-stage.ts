// From each reconcile's desired status to the proxies that run: the deployer runs proxies for
// the Gateways translation accepted (the class is ours and the Gateway itself is valid); a
// Gateway no longer accepted loses them, except one refused for its parameters: a typo in a
// ConfigMap keeps the proxies running as they are. The CA publisher follows the same
// Gateways (kept proxies reconnect too: they need the CA).
import type { Deployer } from '../deployer/deployer.js';
import type { GatewaySettings } from '../proxy-settings/gateway-settings.js';
import type { ProxySettings } from '../proxy-settings/overrides.js';
import type { Sink } from '../runtime/channels.js';
import type { GatewayStatusReport, StatusReport } from '../translate/types.js';
import type { Gateway } from '../types/gateway-api.js';
import type { CacheLookup } from '../watch/lookup.js';

export interface DeployTargets {
  readonly deploy: readonly Gateway[];
  readonly keep: readonly Gateway[];
  readonly settings: (gw: Gateway) => ProxySettings;
}

export class DeployStage implements Sink<StatusReport> {
  constructor(
    private readonly cache: CacheLookup,
    private readonly settings: GatewaySettings,
    private readonly deployer: Pick<Deployer, 'submit'>,
    /** null with --snapshot-plaintext. */
    private readonly caPublisher: { submit(gateways: readonly Gateway[]): void } | null,
  ) {}

  submit(report: StatusReport): void {
    const { deploy, keep, settings } = this.targets(report);
    this.deployer.submit(deploy, { keep, settings });
    this.caPublisher?.submit([...deploy, ...keep]);
  }

  targets(r: StatusReport): DeployTargets {
    const deploy: Gateway[] = [];
    const keep = this.#withAccepted(r, (c) => c.status === 'False' && c.reason === 'InvalidParameters');
    const settings = new Map<Gateway, ProxySettings>();
    for (const gw of this.#withAccepted(r, (c) => c.status === 'True')) {
      const p = this.settings.parameters(gw);
      // A ConfigMap changed since translation: the next reconcile (its watch) decides.
      if (!p.ok) keep.push(gw);
      else {
        deploy.push(gw);
        settings.set(gw, p.settings);
      }
    }
    const defaults = this.settings.policy.defaults;
    return { deploy, keep, settings: (gw: Gateway) => settings.get(gw) ?? defaults };
  }

  /** The cached Gateways of the report whose Accepted condition passes `test`, with the ports their ListenerSets add. */
  #withAccepted(r: StatusReport, test: (c: { status: string; reason: string }) => boolean): Gateway[] {
    return [...r.gateways.values()]
      .filter((g) => g.conditions.some((c) => c.type === 'Accepted' && test(c)))
      .map((g) => withListenerSetPorts(this.cache.gateway(g.namespace, g.name), g))
      .filter((g): g is Gateway => g !== undefined);
  }
}

/**
 * The Gateway as the deployer renders it: the listeners of its accepted ListenerSets appended,
 * so the Service and the pods expose their ports too. The cached object when there are none.
 */
function withListenerSetPorts(gw: Gateway | undefined, report: GatewayStatusReport): Gateway | undefined {
  const ports = report.listenerSetPorts ?? [];
  if (!gw || !ports.length) return gw;
  const added = ports.map((p, i) => ({ name: `listenerset-${i}`, port: p.port, protocol: p.protocol }));
  return { ...gw, spec: { ...gw.spec, listeners: [...gw.spec.listeners, ...added] } };
}
