export { Gateway, type GatewayOptions } from './gateway.js';
export { ProxyRuntime } from './server/runtime.js';
export { compileSnapshot, selectRoute, type CompiledSnapshot, type CompiledRoute } from './routing/compile.js';
export { intersectHostname, hostMatches, effectiveHostnames, normalizeHost } from './routing/hostname.js';
export { LogControl, MODULES } from './log/logger.js';
export { parseDirective, formatDirective, DirectiveError } from './log/directive.js';
export { ERRORS, TollgateError } from './errors.js';
