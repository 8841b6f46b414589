export { freePort, onFreePort, onFreePorts, isPortInUse, type OnFreePortsOptions } from './ports.js';
export { startUpstream, type Upstream, type Handler, type UpstreamTls } from './upstream.js';
export { until, nextEvent, deferred, type UntilOptions } from './until.js';
export { LogSink, captureLog, type LogLine } from './log-sink.js';
export { renderErrorTable, docTable, docCodes, syncErrorsDoc, type DocEntry } from './errors-doc.js';
export { send, type RawResponse } from './http.js';
export { issueTestCertificate, type TestCertificate, type CertificateRequest } from './certificates.js';
export { etcdArgs } from './etcd.js';
export { collectUntilReleased } from './released.js';
