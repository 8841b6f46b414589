// The Gateway API features Tollgate implements (GEP-2162 names), in one place: the
// GatewayClass status lists them (status.supportedFeatures) and the conformance run passes
// the same list to the upstream suite (--supported-features), so a feature is declared only
// when the suite checks it and it passes. Add a name here only with the work that makes its
// conformance tests pass; remove it when they stop passing.

/** Core features of the GATEWAY-HTTP and GATEWAY-GRPC conformance profiles: always supported. */
export const CORE_FEATURES = ['Gateway', 'GRPCRoute', 'HTTPRoute', 'ReferenceGrant'] as const;

/** Extended features of the GATEWAY-HTTP and GATEWAY-GRPC profiles that the proxy and the translator implement. */
export const EXTENDED_FEATURES = [
  'BackendTLSPolicy',
  'BackendTLSPolicySANValidation',
  'GatewayAddressEmpty',
  'GatewayBackendClientCertificate',
  'GatewayFrontendClientCertificateValidation',
  'GatewayFrontendClientCertificateValidationInsecureFallback',
  'GatewayHTTPListenerIsolation',
  'GatewayHTTPSListenerDetectMisdirectedRequests',
  'GatewayInfrastructurePropagation',
  'GatewayPort8080',
  'GatewayStaticAddresses',
  'GRPCRouteNamedRouteRule',
  'HTTPRoute303RedirectStatusCode',
  'HTTPRoute307RedirectStatusCode',
  'HTTPRoute308RedirectStatusCode',
  'HTTPRouteBackendProtocolH2C',
  'HTTPRouteBackendProtocolWebSocket',
  'HTTPRouteBackendRequestHeaderModification',
  'HTTPRouteBackendTimeout',
  'HTTPRouteCORS',
  'HTTPRouteDestinationPortMatching',
  'HTTPRouteHostRewrite',
  'HTTPRouteMethodMatching',
  'HTTPRouteNamedRouteRule',
  'HTTPRouteParentRefPort',
  'HTTPRoutePathRedirect',
  'HTTPRoutePathRewrite',
  'HTTPRoutePortRedirect',
  'HTTPRouteQueryParamMatching',
  'HTTPRouteRequestMirror',
  'HTTPRouteRequestMultipleMirrors',
  'HTTPRouteRequestPercentageMirror',
  'HTTPRouteRequestTimeout',
  'HTTPRouteResponseHeaderModification',
  'HTTPRouteRetry',
  'HTTPRouteRetryBackendTimeout',
  'HTTPRouteRetryConnectionError',
  'HTTPRouteSchemeRedirect',
  'ListenerSet',
] as const;

/**
 * Features of the GATEWAY-TLS profile: TLSRoute (its core) and the listener modes (extended).
 * Mixed: Passthrough and Terminate listeners on one port (the SNI picks the listener first).
 */
export const TLS_FEATURES = ['TLSRoute', 'TLSRouteModeMixed', 'TLSRouteModeTerminate'] as const;

export type SupportedFeature = (typeof CORE_FEATURES)[number] | (typeof EXTENDED_FEATURES)[number] | (typeof TLS_FEATURES)[number];

/** Every supported feature, sorted by name (GEP-2162 asks for a sorted list). */
export const SUPPORTED_FEATURES: readonly SupportedFeature[] = [...CORE_FEATURES, ...EXTENDED_FEATURES, ...TLS_FEATURES].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
