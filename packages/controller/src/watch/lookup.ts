// Typed reads of the informer caches for what runs after translation (the deploy stage, the
// proxies' view for status, the stream's authorization): each object as the watch holds it now.
import type { V1ConfigMap, V1Service } from '@kubernetes/client-node';
import type { Gateway, GatewayClass } from '../types/gateway-api.js';
import type { World } from './world.js';

export class CacheLookup {
  constructor(private readonly world: World) {}

  gateway(namespace: string, name: string): Gateway | undefined {
    return this.world.get('Gateway', name, namespace) as Gateway | undefined;
  }

  /** `key`: `<namespace>/<name>`. */
  gatewayByKey(key: string): Gateway | undefined {
    const [namespace, name] = key.split('/') as [string, string];
    return this.gateway(namespace, name);
  }

  gatewayClass(name: string): GatewayClass | undefined {
    return this.world.get('GatewayClass', name) as GatewayClass | undefined;
  }

  /** A ConfigMap read whole (a referenced one); proxy-settings/parameters.ts takes it for parameters only with its label. */
  configMap(namespace: string, name: string): V1ConfigMap | undefined {
    return this.world.get('ConfigMap', name, namespace);
  }

  service(name: string, namespace: string): V1Service | undefined {
    return this.world.get('Service', name, namespace);
  }
}
