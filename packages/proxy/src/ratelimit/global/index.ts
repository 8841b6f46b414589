// Global rate limiting through an Envoy RLS v3 service (docs/rate-limiting.md, "Global limits").
export type { RequestFacts } from '../facts.js';
export { RlsClientPool, RlsCallError, type RlsClient, type RlsServiceState } from './client.js';
export { serviceNeeds, type ReadinessNeed } from './readiness.js';
export { GlobalRateLimitConfigError } from './descriptors.js';
export {
  RATE_LIMITED_BODY,
  RATE_LIMITED_HEADER,
  SERVICE_ERROR_BODY,
  SERVICE_ERROR_STATUS,
} from './headers.js';
export { compileGlobalLimiter, type GlobalCheck, type GlobalLimiter, type GlobalLimiterDeps, type GlobalOutcome } from './limiter.js';
export { GlobalAnswers, DEFAULT_MAX_GLOBAL_ANSWERS, type GlobalAnswer, type AnswerPlace } from './answers.js';
