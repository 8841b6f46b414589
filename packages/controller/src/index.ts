// @tollgate/controller: the cluster-mode control plane of Tollgate.
export { translate } from './translate/index.js';
export type * from './translate/types.js';
export type * from './types/gateway-api.js';
export { GATEWAY_GROUP, POLICY_GROUP } from './types/gateway-api.js';
export { CONTROLLER_ERRORS } from './errors.js';
export { SnapshotStore } from './snapshots/store.js';
export { SnapshotStreamServer, type ProxyView, type NackReport, type StreamServerOptions } from './snapshots/stream-server.js';
export { StreamMetrics } from './snapshots/stream-metrics.js';
