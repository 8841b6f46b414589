// A Gateway's proxy settings as the caches hold its class and ConfigMaps now: its parameters
// (parameters.ts) and the replicas it asked for (overrides.ts over them). Read after
// translation by the deploy stage (what to render) and by Programmed (how many proxies to
// expect, and where to raise them from 0).
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Gateway, GatewayClass } from '../types/gateway-api.js';
import { ANNOTATION_PREFIX, readOverrides } from './overrides.js';
import { gatewayParameters, type ParameterPolicy, type ParametersVerdict } from './parameters.js';

export interface SettingsLookup {
  gatewayClass(name: string): GatewayClass | undefined;
  configMap(namespace: string, name: string): V1ConfigMap | undefined;
}

export interface Replicas {
  readonly replicas: number;
  /** How to raise replicas from 0 when a parameters ConfigMap (not an annotation) set them. */
  readonly hint?: string;
}

export class GatewaySettings {
  constructor(
    private readonly lookup: SettingsLookup,
    readonly policy: ParameterPolicy,
  ) {}

  /** Its class's ConfigMap, then its own (translation refuses the Gateway when they cannot be read, or choose what only the cluster admin may). */
  parameters(gw: Gateway): ParametersVerdict {
    return gatewayParameters(gw, this.lookup.gatewayClass(gw.spec.gatewayClassName), (namespace, name) => this.lookup.configMap(namespace, name), this.policy);
  }

  replicas(gw: Gateway): Replicas {
    const params = this.parameters(gw);
    const annotations = gw.spec.infrastructure?.annotations;
    const replicas = readOverrides(annotations, params.ok ? params.settings : this.policy.defaults).settings.replicas;
    const annotated = annotations?.[`${ANNOTATION_PREFIX}replicas`] !== undefined;
    return params.ok && params.sources.length && !annotated ? { replicas, hint: `set replicas above 0 in ConfigMap ${params.sources.join(' or ')}` } : { replicas };
  }
}
