// The errors of the shared pieces: the admin server scaffolding (bind, guards, 404/405,
// /logging, pprof) and the SSE parser. The proxy's and the controller's admin servers both
// answer with these.
import { defineErrors } from '@tollgate/api';

export const KIT_ERRORS = defineErrors({
  adminBind: {
    code: 'TG_ADMIN_BIND',
    message: '{role} address {address} {problem}',
    hint: 'stop the other process on that port, or choose another address (the proxy: config.adminAddr or --admin-addr)',
  },
  adminHostRefused: {
    code: 'TG_ADMIN_HOST_REFUSED',
    status: 421,
    message: 'admin server refused Host "{host}": only loopback names (127.0.0.1, localhost, [::1]) and config.adminAllowedHosts are served, so that a web page cannot reach this server through DNS rebinding',
    hint: 'connect to 127.0.0.1 or localhost (a port-forward does), or add the name to config.adminAllowedHosts',
  },
  adminCrossSite: {
    code: 'TG_ADMIN_CROSS_SITE',
    status: 403,
    message: 'admin server refused a browser request ({header}: {value}): {what} only from clients that send neither Origin nor Sec-Fetch-Site, such as curl or gwctl',
    hint: 'send the request with curl or gwctl; a web page may not change admin state',
  },
  adminUnknownQuery: {
    code: 'TG_ADMIN_UNKNOWN_QUERY',
    status: 400,
    message: 'unknown query parameter {names}; {expected}',
    hint: 'drop the parameter; docs/admin-api.md lists the parameters of each endpoint',
  },
  adminNotFound: {
    code: 'TG_ADMIN_NOT_FOUND',
    status: 404,
    message: 'no admin endpoint {method} {path}; GET / lists them',
    hint: 'GET / on the admin server lists its endpoints (docs/admin-api.md too)',
  },
  adminMethod: {
    code: 'TG_ADMIN_METHOD_NOT_ALLOWED',
    status: 405,
    message: '{method} is not allowed on {path}; use {allow}',
    hint: 'use the method in the Allow header: reads are GET, changes are POST',
  },
  logDirectiveInvalid: {
    code: 'TG_LOG_DIRECTIVE_INVALID',
    status: 400,
    message: 'invalid log directive: {reason}',
    hint: 'a directive is a level (error, warn, info, debug, trace) or a list such as warn,upstream=debug with known module names',
  },
  logLevelMissing: {
    code: 'TG_LOG_LEVEL_MISSING',
    status: 400,
    message: 'expected {expected}',
    hint: 'give ?level=<level>; POST /logging without a query reads the level',
  },
  logLevelInvalid: {
    code: 'TG_LOG_LEVEL_INVALID',
    status: 400,
    message: 'unknown level "{level}"; levels: error, warn, info, debug, trace',
    hint: 'use one of error, warn, info, debug, trace',
  },
  logComponentUnknown: {
    code: 'TG_LOG_COMPONENT_UNKNOWN',
    status: 400,
    message: 'unknown component "{component}"; components: {components}',
    hint: 'GET /logging lists the components',
  },
  pprofSeconds: {
    code: 'TG_PPROF_SECONDS',
    status: 400,
    message: 'seconds must be an integer from 1 to 300 (got {got}); default 10',
    hint: 'give ?seconds=N with N from 1 to 300',
  },
  pprofBusy: {
    code: 'TG_PPROF_BUSY',
    status: 409,
    message: 'a CPU profile is already being taken; retry when it completes',
    hint: 'one CPU profile runs at a time per process; wait for it (or disconnect its client, which stops it)',
  },
  memoryGc: {
    code: 'TG_MEMORY_GC',
    status: 400,
    message: 'gc must be true or false (got {got})',
    hint: 'give ?gc=true to run a full garbage collection before the figures are read',
  },
  sseLineTooLong: {
    code: 'TG_SSE_LINE_TOO_LONG',
    message: 'a server-sent event grew past {limit} bytes without ending; the rest of the stream is passed through unparsed',
    hint: 'raise the limit (config.maxSseLineBytes on the proxy) if the backend really sends events that large',
  },
});
