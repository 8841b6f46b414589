// The Gateway API release installed in the cluster: the bundle-version annotation of the
// GatewayClass CRD, read once at start (GatewayClass SupportedVersion reports it). Unknown
// (undefined) when it cannot be read; translation then reports SupportedVersion Unknown.
import { ApiextensionsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeApiError } from './errors.js';

export const GATEWAYCLASS_CRD = 'gatewayclasses.gateway.networking.k8s.io';
const BUNDLE_VERSION = 'gateway.networking.k8s.io/bundle-version';

export async function readGatewayApiVersion(kc: KubeConfig, log: Logger): Promise<string | undefined> {
  try {
    const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: GATEWAYCLASS_CRD });
    const version = crd.metadata?.annotations?.[BUNDLE_VERSION];
    log.info({ gatewayApi: version ?? 'unknown' }, 'Gateway API CRDs');
    return version;
  } catch (err) {
    log.warn({ crd: GATEWAYCLASS_CRD, err: describeApiError(err) }, 'cannot read the Gateway API version; GatewayClass SupportedVersion stays Unknown');
    return undefined;
  }
}
