// @tollgate/controller: the cluster-mode control plane of Tollgate.
export { translate } from './translate/index.js';
export type * from './translate/types.js';
export type * from './types/gateway-api.js';
export { GATEWAY_GROUP, POLICY_GROUP } from './types/gateway-api.js';
export { CONTROLLER_ERRORS } from './errors.js';
export { SnapshotStore } from './snapshots/store.js';
export { SnapshotStreamServer, type ProxyView, type NackReport, type StreamServerOptions } from './snapshots/stream-server.js';
export { StreamMetrics } from './snapshots/stream-metrics.js';
export type { StreamSecurity } from './snapshots/stream-server.js';
export type { StreamLimits } from './snapshots/stream-limits.js';
export { TokenReviewAuthenticator, type AuthDecision, type StreamAuthenticator } from './snapshots/stream-auth.js';
export type { ReviewResult, TokenReviewer } from './snapshots/token-review.js';
export { CertificateAuthority } from './pki/authority.js';
export { ServingCertificates } from './pki/serving.js';
