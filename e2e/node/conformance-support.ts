// What the conformance run needs besides the node: where the suite's binary is cached (as
// conformance/build-suite.sh puts it), who we are in the report, and the report's shape.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, VERSIONS } from '../lib/tools.js';

export const CONFORMANCE_PROFILE = 'GATEWAY-HTTP';
/** The GatewayClass the suite's Gateways name (the chart's default class). */
export const GATEWAY_CLASS = 'tollgate';

/**
 * The extended features of the GATEWAY-HTTP profile at Gateway API v1.6.1 (the suite's
 * Gateway, HTTPRoute and BackendTLSPolicy feature sets): the report lists a declared feature
 * among the profile's extended ones only when it is one of these.
 */
export const PROFILE_EXTENDED_FEATURES: ReadonlySet<string> = new Set([
  'GatewayPort8080', 'GatewayStaticAddresses', 'GatewayHTTPListenerIsolation', 'GatewayHTTPSListenerDetectMisdirectedRequests',
  'GatewayInfrastructurePropagation', 'GatewayAddressEmpty', 'GatewayBackendClientCertificate', 'GatewayFrontendClientCertificateValidation',
  'GatewayFrontendClientCertificateValidationInsecureFallback', 'ListenerSet',
  'HTTPRouteDestinationPortMatching', 'HTTPRouteBackendRequestHeaderModification', 'HTTPRouteQueryParamMatching', 'HTTPRouteMethodMatching',
  'HTTPRouteResponseHeaderModification', 'HTTPRoutePortRedirect', 'HTTPRouteSchemeRedirect', 'HTTPRoutePathRedirect', 'HTTPRouteHostRewrite',
  'HTTPRoutePathRewrite', 'HTTPRouteRequestMirror', 'HTTPRouteRequestMultipleMirrors', 'HTTPRouteRequestPercentageMirror', 'HTTPRouteRequestTimeout',
  'HTTPRouteBackendTimeout', 'HTTPRouteParentRefPort', 'HTTPRouteBackendProtocolH2C', 'HTTPRouteBackendProtocolWebSocket',
  'HTTPRoute303RedirectStatusCode', 'HTTPRoute307RedirectStatusCode', 'HTTPRoute308RedirectStatusCode', 'HTTPRouteRetry',
  'HTTPRouteRetryBackendTimeout', 'HTTPRouteRetryConnectionError', 'HTTPRouteNamedRouteRule', 'HTTPRouteCORS', 'BackendTLSPolicy',
  'BackendTLSPolicySANValidation',
]);

/**
 * How many tests of the profile the run must count, all passed: the core tests of
 * GATEWAY-HTTP at Gateway API v1.6.1, and the extended tests of the features Tollgate
 * declares (packages/controller/src/translate/features.ts). Some declared features have no
 * test of their own at v1.6.1 (HTTPRouteRetryBackendTimeout, HTTPRouteRetryConnectionError):
 * they add none. Declaring a feature, or moving to
 * another suite version, changes these on purpose, with the report (`pnpm conformance
 * --update-report`).
 */
export const EXPECTED_TESTS = { core: 37, extended: 58 } as const;

/** The report's file name, in .test-results/conformance/ and conformance/reports/<version>/. */
export function reportFileName(impl: Implementation): string {
  return `tollgate-${impl.version}-${CONFORMANCE_PROFILE}-report.yaml`;
}

export function suiteBinary(cache: string): string {
  return join(cache, `gateway-api-conformance-${VERSIONS.gatewayApi}`, 'conformance.test');
}

export interface Implementation {
  organization: string;
  project: string;
  url: string;
  version: string;
  contact: string[];
}

/** The implementation block of the report; the version is the proxy's (the chart's appVersion). */
export function implementation(): Implementation {
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'packages/proxy/package.json'), 'utf8')) as { version: string }).version;
  return {
    organization: 'tollgate-dev',
    project: 'tollgate',
    url: 'https://tollgate.dev',
    version: `v${version}`,
    contact: ['https://github.com/tollgate-dev/tollgate/issues'],
  };
}

interface ProfileResult {
  result: 'success' | 'partial' | 'failure';
  statistics?: { Passed: number; Failed: number; Skipped: number };
  failedTests?: string[];
  skippedTests?: string[];
  supportedFeatures?: string[];
  unsupportedFeatures?: string[];
}

/** The ConformanceReport the suite writes (sigs.k8s.io/gateway-api/conformance/apis/v1). */
export interface ConformanceReport {
  apiVersion: string;
  kind: 'ConformanceReport';
  gatewayAPIVersion: string;
  gatewayAPIChannel: string;
  implementation: Implementation;
  mode: string;
  profiles: { name: string; core: ProfileResult; extended?: ProfileResult }[];
  succeededProvisionalTests?: string[];
}
