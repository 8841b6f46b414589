// What the conformance run needs besides the node: where the suite's binary is cached (as
// conformance/build-suite.sh puts it), who we are in the report, and the report's shape.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, VERSIONS } from '../lib/tools.js';

/** The GatewayClass the suite's Gateways name (the chart's default class). */
export const GATEWAY_CLASS = 'tollgate';

/** The Gateway's extended features at Gateway API v1.6.1 (features.GatewayExtendedFeatures): in every Gateway profile. */
const GATEWAY_EXTENDED_FEATURES = [
  'GatewayPort8080', 'GatewayStaticAddresses', 'GatewayHTTPListenerIsolation', 'GatewayHTTPSListenerDetectMisdirectedRequests',
  'GatewayInfrastructurePropagation', 'GatewayAddressEmpty', 'GatewayBackendClientCertificate', 'GatewayFrontendClientCertificateValidation',
  'GatewayFrontendClientCertificateValidationInsecureFallback', 'ListenerSet',
];

export interface ConformanceProfile {
  /** The suite's name of the profile (--conformance-profiles). */
  readonly name: string;
  /**
   * The profile's extended features at Gateway API v1.6.1 (the suite's profiles.go): the report
   * lists a declared feature among the profile's extended ones only when it is one of these.
   */
  readonly extendedFeatures: ReadonlySet<string>;
  /**
   * How many tests of the profile the run must count, all passed: its core tests, and the
   * extended tests of the features Tollgate declares (packages/controller/src/translate/features.ts).
   * Declaring a feature, or moving to another suite version, changes these on purpose, with the
   * report (`pnpm conformance --update-report`).
   */
  readonly expected: { readonly core: number; readonly extended: number };
}

/**
 * The profiles `pnpm conformance` runs, in one suite run: one entry each. A test of the Gateway
 * alone (GatewayModifyListeners) counts in every profile, as the suite reports it.
 */
export const CONFORMANCE_PROFILES: readonly ConformanceProfile[] = [
  {
    // Some declared features have no test of their own at v1.6.1 (HTTPRouteRetryBackendTimeout,
    // HTTPRouteRetryConnectionError): they add none.
    name: 'GATEWAY-HTTP',
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
    // ListenerSet: 12 tests (ListenerSetAllowedRoutesSupportedKinds needs TLSRoute: GATEWAY-TLS).
    expected: { core: 37, extended: 57 },
  },
  {
    // Core: the 11 tests of the Gateway alone and the 4 GRPCRoute tests; extended:
    // GatewayStaticAddresses, GatewayInfrastructure, GatewayOptionalAddressValue and the 7
    // ListenerSet tests the profile has. The declared GRPCRouteNamedRouteRule is not an extended
    // feature of this profile at v1.6.1: its provisional test GRPCRouteNamedRule runs and counts
    // under succeededProvisionalTests.
    name: 'GATEWAY-GRPC',
    extendedFeatures: new Set(GATEWAY_EXTENDED_FEATURES),
    expected: { core: 15, extended: 10 },
  },
  {
    // Core: the 11 tests of the Gateway alone and 9 TLSRoute tests; extended: 3 Gateway tests
    // and 4 TLSRoute tests.
    name: 'GATEWAY-TLS',
    extendedFeatures: new Set([...GATEWAY_EXTENDED_FEATURES, 'TLSRouteModeTerminate', 'TLSRouteModeMixed']),
    // And 8 ListenerSet tests: the 7 of GATEWAY-GRPC and ListenerSetAllowedRoutesSupportedKinds.
    expected: { core: 20, extended: 15 },
  },
];

/**
 * The profiles this run asks for: TOLLGATE_CONFORMANCE_PROFILES (a comma-separated list of
 * names, `pnpm conformance --conformance-profiles=...`), every one of CONFORMANCE_PROFILES by default.
 */
export function selectedProfiles(list = process.env.TOLLGATE_CONFORMANCE_PROFILES?.trim()): readonly ConformanceProfile[] {
  if (!list) return CONFORMANCE_PROFILES;
  return list.split(',').map((name) => {
    const p = CONFORMANCE_PROFILES.find((c) => c.name === name.trim());
    if (!p) throw new Error(`unknown conformance profile ${name}; known: ${CONFORMANCE_PROFILES.map((c) => c.name).join(', ')}`);
    return p;
  });
}

/** The report's file name (all the profiles of the run in one), in .test-results/conformance/ and conformance/reports/<version>/. */
export function reportFileName(impl: Implementation): string {
  return `tollgate-${impl.version}-report.yaml`;
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
