// What the conformance run needs besides the node: where the suite's binary is cached (as
// conformance/build-suite.sh puts it), who we are in the report, and the report's shape.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, VERSIONS } from '../lib/tools.js';

/** The GatewayClass the suite's Gateways name (the chart's default class). */
export const GATEWAY_CLASS = 'tollgate';

/** The Gateway's extended features at Gateway API v1.6.1: extended features of every profile. */
const GATEWAY_EXTENDED_FEATURES = [
  'GatewayPort8080', 'GatewayStaticAddresses', 'GatewayHTTPListenerIsolation', 'GatewayHTTPSListenerDetectMisdirectedRequests',
  'GatewayInfrastructurePropagation', 'GatewayAddressEmpty', 'GatewayBackendClientCertificate', 'GatewayFrontendClientCertificateValidation',
  'GatewayFrontendClientCertificateValidationInsecureFallback', 'ListenerSet',
];

/**
 * A conformance profile the run checks: its extended features at Gateway API v1.6.1 (the
 * report lists a declared feature among the profile's extended ones only when it is one of
 * these), and how many of its tests the run must count, all passed: its core tests, and the
 * extended tests of the features Tollgate declares (packages/controller/src/translate/features.ts).
 * A test of Gateway features alone counts in every profile. Declaring a feature, or moving to
 * another suite version, changes these on purpose, with the report (`pnpm conformance
 * --update-report`).
 */
export interface ConformanceProfile {
  readonly name: string;
  readonly extendedFeatures: ReadonlySet<string>;
  readonly expectedTests: { readonly core: number; readonly extended: number };
}

export const CONFORMANCE_PROFILES: readonly ConformanceProfile[] = [
  {
    name: 'GATEWAY-HTTP',
    // Some declared features have no test of their own at v1.6.1 (HTTPRouteRetryBackendTimeout, HTTPRouteRetryConnectionError): they add none.
    expectedTests: { core: 37, extended: 44 },
    extendedFeatures: new Set([
      ...GATEWAY_EXTENDED_FEATURES,
      'HTTPRouteDestinationPortMatching', 'HTTPRouteBackendRequestHeaderModification', 'HTTPRouteQueryParamMatching', 'HTTPRouteMethodMatching',
      'HTTPRouteResponseHeaderModification', 'HTTPRoutePortRedirect', 'HTTPRouteSchemeRedirect', 'HTTPRoutePathRedirect', 'HTTPRouteHostRewrite',
      'HTTPRoutePathRewrite', 'HTTPRouteRequestMirror', 'HTTPRouteRequestMultipleMirrors', 'HTTPRouteRequestPercentageMirror', 'HTTPRouteRequestTimeout',
      'HTTPRouteBackendTimeout', 'HTTPRouteParentRefPort', 'HTTPRouteBackendProtocolH2C', 'HTTPRouteBackendProtocolWebSocket',
      'HTTPRoute303RedirectStatusCode', 'HTTPRoute307RedirectStatusCode', 'HTTPRoute308RedirectStatusCode', 'HTTPRouteRetry',
      'HTTPRouteRetryBackendTimeout', 'HTTPRouteRetryConnectionError', 'HTTPRouteNamedRouteRule', 'HTTPRouteCORS', 'BackendTLSPolicy',
      'BackendTLSPolicySANValidation',
    ]),
  },
  // Core: 11 Gateway tests and 9 TLSRoute tests; extended: 3 Gateway tests and 4 TLSRoute tests.
  { name: 'GATEWAY-TLS', expectedTests: { core: 20, extended: 7 }, extendedFeatures: new Set([...GATEWAY_EXTENDED_FEATURES, 'TLSRouteModeTerminate', 'TLSRouteModeMixed']) },
];

/**
 * The profiles a run checks: `--conformance-profiles=A,B` of `pnpm conformance`
 * (TOLLGATE_CONFORMANCE_PROFILES), each one of CONFORMANCE_PROFILES; default all of them.
 */
export function selectedProfiles(value = process.env.TOLLGATE_CONFORMANCE_PROFILES): readonly ConformanceProfile[] {
  const names = value?.split(',').map((s) => s.trim()).filter(Boolean) ?? [];
  if (!names.length) return CONFORMANCE_PROFILES;
  return names.map((name) => {
    const p = CONFORMANCE_PROFILES.find((x) => x.name === name);
    if (!p) throw new Error(`--conformance-profiles: unknown profile ${name}; known: ${CONFORMANCE_PROFILES.map((x) => x.name).join(', ')}`);
    return p;
  });
}

/**
 * The report's file name, in .test-results/conformance/ and conformance/reports/<version>/: one
 * report for all the profiles of a run (the suite's `default` mode).
 */
export function reportFileName(impl: Implementation): string {
  return `tollgate-${impl.version}-default-report.yaml`;
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
