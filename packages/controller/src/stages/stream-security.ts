// How the snapshot stream is secured: TLS from the controller's CA (kept in a Secret,
// pki/ca-loader.ts) with each proxy's token checked by TokenReview against the ServiceAccount
// the deployer names for its Gateway; the CA certificate is published to each Gateway
// namespace (pki/ca-publisher.ts). With --snapshot-plaintext, none of it (development only).
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { proxyName } from '../deployer/names.js';
import { parseHostPort, type ControllerOptions } from '../options.js';
import { CaLoader } from '../pki/ca-loader.js';
import { CaPublisher, KubeConfigMapApi } from '../pki/ca-publisher.js';
import { KubeCaSecretApi } from '../pki/ca-secret.js';
import { servingNames } from '../pki/names.js';
import type { Signal } from '../runtime/channels.js';
import { TokenReviewAuthenticator } from '../snapshots/stream-auth.js';
import type { StreamMetrics } from '../snapshots/stream-metrics.js';
import type { StreamSecurity } from '../snapshots/stream-server.js';
import { CachingTokenReviewer, KubeTokenReviewer } from '../snapshots/token-review.js';
import type { CacheLookup } from '../watch/lookup.js';

export interface SecuredStream {
  readonly security: StreamSecurity;
  /** The stream's CA and serving certificate; null with --snapshot-plaintext. */
  readonly ca: CaLoader | null;
  /** Publishes the CA certificate to each Gateway namespace (leader); null with --snapshot-plaintext. */
  readonly caPublisher: CaPublisher | null;
}

export interface StreamSecurityDeps {
  readonly kc: KubeConfig;
  readonly options: ControllerOptions;
  readonly cache: CacheLookup;
  readonly metrics: StreamMetrics;
  /** Raised when the CA publisher's conflicts change (Programmed names them). */
  readonly proxiesChanged: Signal;
  readonly log: Logger;
  readonly publisherLog: Logger;
}

export function streamSecurity(d: StreamSecurityDeps): SecuredStream {
  const { kc, options: o } = d;
  if (o.snapshotPlaintext) {
    d.log.warn('the snapshot stream is served without TLS or authentication (--snapshot-plaintext): for development only');
    return { security: { kind: 'plaintext' }, ca: null, caPublisher: null };
  }
  const caPublisher = new CaPublisher({ api: new KubeConfigMapApi(kc), log: d.publisherLog, onConflicts: d.proxiesChanged.raise });
  const ca = new CaLoader({
    api: new KubeCaSecretApi(kc),
    namespace: o.namespace,
    secret: o.snapshotCaSecret,
    names: servingNames(parseHostPort(o.snapshotService, '--snapshot-service').host, o.snapshotTlsNames),
    log: d.log,
    loaded: (c) => caPublisher.setCertificate(c.certificate),
  });
  // The proxies of a Gateway run as the ServiceAccount the deployer names for it.
  const expected = (gateway: string) => {
    const [namespace, name] = gateway.split('/') as [string, string];
    const gw = d.cache.gateway(namespace, name);
    if (!gw) return `the controller knows no Gateway ${gateway}`;
    return { namespace, name: proxyName(gw) };
  };
  const reviewer = new CachingTokenReviewer(new KubeTokenReviewer(kc), {
    // A result is not trusted for longer than a stream goes without a re-check.
    positiveTtlMs: Math.min(60_000, o.streamLimits.reauthIntervalMs),
    reviewsPerSecond: o.tokenReviewsPerSecond,
    counted: (result) => d.metrics.tokenReviews.inc({ result }),
  });
  return { security: { kind: 'tls', credentials: () => ca.serving.serverCredentials(), auth: new TokenReviewAuthenticator(reviewer, expected) }, ca, caPublisher };
}
