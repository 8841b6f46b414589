export * from './schema/common.js';
export * from './schema/gateway-api.js';
export * from './schema/traffic-policy.js';
export * from './schema/budget-overrides.js';
export * from './schema/standalone-config.js';
export * from './schema/tls-bind-config.js';
export * from './schema/backend.js';
export * from './schema/backend-tls.js';
export * from './backend-tls.js';
export * from './client-validation.js';
export * from './process-settings.js';
export * from './snapshot.js';
export * from './snapshot-schema.js';
export * from './snapshot-wire.js';
export { snapshotVersion } from './snapshot-version.js';
export { commonEnds, firstIndex } from './list-search.js';
export { listedPolicies, type ListedPolicies } from './listed-policies.js';
export * from './secret.js';
export * from './certificate.js';
export * from './duration.js';
export * from './host-port.js';
export * from './regex.js';
export * from './cel/index.js';
export * from './limits.js';
export * from './validation-error.js';
export { compile, type Validator } from './ajv.js';
export { checkTrafficPolicy, checkRouteRule, checkRegexes, checkUnique, type PolicyContext } from './rules.js';
export {
  parseConfigText,
  validateStandaloneConfig,
  standaloneToSnapshot,
  configLimits,
  certificateEntries,
  type CertificateLookup,
  contentVersion,
  listenerName,
  toMatches,
  toFilter,
  toPolicy,
} from './standalone.js';
export * from './crd/index.js';
export * from './schema/trace-event.js';
export * from './admin/budgets.js';
export * from './errors/index.js';
export * from './auth/index.js';
export * from './transformation/index.js';
export { looksLikeSecret } from './secret-text.js';
export * from './traffic/index.js';
export * from './provider/index.js';
export * from './resilience/index.js';
export { lazyModule } from './lazy-module.js';
export { yaml } from './yaml.js';
