// The Gateway API (v1.6.1, standard channel) objects the controller reads, reduced to the
// fields translation looks at. Fields are as the API server returns them: optional where the
// CRD defaults them, so translation applies the defaults itself and never trusts that a
// webhook or the CRD did. Status is left out: translation computes it, it never reads it.
import type { BackendSpec, GatewayPolicySpec, TrafficPolicy } from '@tollgate/api';

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** The group of Tollgate's own resources a route or policy may name (Backend). */
export const BACKEND_GROUP = 'tollgate.dev';
export const POLICY_GROUP = 'tollgate.dev';

/** The part of metav1.ObjectMeta translation uses. */
export interface ObjectMeta {
  readonly name: string;
  /** Absent only on cluster-scoped objects (GatewayClass, Namespace). */
  readonly namespace?: string;
  readonly generation?: number;
  /** RFC 3339 from custom resource informers, Date from the typed core clients. */
  readonly creationTimestamp?: string | Date;
  readonly labels?: Readonly<Record<string, string>>;
  readonly uid?: string;
  readonly resourceVersion?: string;
}

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

// GatewayClass -----------------------------------------------------------------------------

export interface ParametersReference {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface GatewayClass {
  readonly apiVersion: 'gateway.networking.k8s.io/v1' | 'gateway.networking.k8s.io/v1beta1';
  readonly kind: 'GatewayClass';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly controllerName: string;
    readonly parametersRef?: ParametersReference;
    readonly description?: string;
  };
}

// Gateway ----------------------------------------------------------------------------------

export type ProtocolType = 'HTTP' | 'HTTPS' | 'TLS' | 'TCP' | 'UDP' | (string & {});

export interface RouteGroupKind {
  readonly group?: string;
  readonly kind: string;
}

export interface SecretObjectReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface GatewayTLSConfig {
  readonly mode?: 'Terminate' | 'Passthrough';
  readonly certificateRefs?: readonly SecretObjectReference[];
  readonly options?: Readonly<Record<string, string>>;
}

/** A reference to a CA bundle (Gateway API ObjectReference: group and kind are required). */
export interface CaCertificateReference {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface FrontendTLSValidation {
  readonly caCertificateRefs: readonly CaCertificateReference[];
  /** Defaulted by the CRD; absent means AllowValidOnly. */
  readonly mode?: 'AllowValidOnly' | 'AllowInsecureFallback';
}

/** spec.tls.frontend: client certificate validation of the Gateway's HTTPS listeners, by default and per port. */
export interface FrontendTLSConfig {
  readonly default: { readonly validation?: FrontendTLSValidation };
  readonly perPort?: readonly { readonly port: number; readonly tls: { readonly validation?: FrontendTLSValidation } }[];
}

export interface AllowedRoutes {
  readonly namespaces?: {
    readonly from?: 'All' | 'Same' | 'Selector' | 'None';
    readonly selector?: LabelSelector;
  };
  readonly kinds?: readonly RouteGroupKind[];
}

export interface Listener {
  readonly name: string;
  readonly hostname?: string;
  readonly port: number;
  readonly protocol: ProtocolType;
  readonly tls?: GatewayTLSConfig;
  readonly allowedRoutes?: AllowedRoutes;
}

export interface GatewaySpecAddress {
  readonly type?: string;
  readonly value?: string;
}

export interface Gateway {
  readonly apiVersion: 'gateway.networking.k8s.io/v1' | 'gateway.networking.k8s.io/v1beta1';
  readonly kind: 'Gateway';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly gatewayClassName: string;
    readonly listeners: readonly Listener[];
    readonly addresses?: readonly GatewaySpecAddress[];
    readonly infrastructure?: {
      readonly labels?: Readonly<Record<string, string>>;
      readonly annotations?: Readonly<Record<string, string>>;
      readonly parametersRef?: { readonly group: string; readonly kind: string; readonly name: string };
    };
    /** Of spec.tls, translation reads the backend client certificate and the frontend client validation. */
    readonly tls?: { readonly backend?: { readonly clientCertificateRef?: SecretObjectReference }; readonly frontend?: FrontendTLSConfig };
    /** Experimental; Tollgate has no default Gateways: not read. */
    readonly defaultScope?: string;
    /** Which namespaces' ListenerSets may add listeners; absent: none. */
    readonly allowedListeners?: { readonly namespaces?: { readonly from?: 'All' | 'Same' | 'Selector' | 'None' | (string & {}); readonly selector?: LabelSelector } };
  };
}

/** ListenerSet: listeners added to a Gateway from outside its spec (the Gateway's allowedListeners decide whose). */
export interface ListenerSet {
  readonly apiVersion: 'gateway.networking.k8s.io/v1';
  readonly kind: 'ListenerSet';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly parentRef: { readonly group?: string; readonly kind?: string; readonly name: string; readonly namespace?: string };
    readonly listeners: readonly Listener[];
  };
}

// HTTPRoute --------------------------------------------------------------------------------

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
}

export interface HTTPPathMatch {
  readonly type?: 'Exact' | 'PathPrefix' | 'RegularExpression';
  readonly value?: string;
}

export interface HTTPHeaderMatch {
  readonly type?: 'Exact' | 'RegularExpression';
  readonly name: string;
  readonly value: string;
}

export interface HTTPQueryParamMatch {
  readonly type?: 'Exact' | 'RegularExpression';
  readonly name: string;
  readonly value: string;
}

export interface HTTPRouteMatch {
  readonly path?: HTTPPathMatch;
  readonly headers?: readonly HTTPHeaderMatch[];
  readonly queryParams?: readonly HTTPQueryParamMatch[];
  readonly method?: string;
}

export interface HTTPHeader {
  readonly name: string;
  readonly value: string;
}

export interface HTTPHeaderFilter {
  readonly set?: readonly HTTPHeader[];
  readonly add?: readonly HTTPHeader[];
  readonly remove?: readonly string[];
}

export interface HTTPPathModifier {
  readonly type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  readonly replaceFullPath?: string;
  readonly replacePrefixMatch?: string;
}

export interface HTTPRequestRedirectFilter {
  readonly scheme?: 'http' | 'https';
  readonly hostname?: string;
  readonly path?: HTTPPathModifier;
  readonly port?: number;
  readonly statusCode?: 301 | 302 | 303 | 307 | 308;
}

export interface HTTPURLRewriteFilter {
  readonly hostname?: string;
  readonly path?: HTTPPathModifier;
}

export interface LocalObjectReference {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
}

/** Every filter type of the v1.6.1 CRD; the ones the proxy cannot run are reported, not dropped silently. */
export interface HTTPRouteFilter {
  readonly type:
    | 'RequestHeaderModifier'
    | 'ResponseHeaderModifier'
    | 'RequestRedirect'
    | 'URLRewrite'
    | 'RequestMirror'
    | 'CORS'
    | 'ExternalAuth'
    | 'ExtensionRef'
    | (string & {});
  readonly requestHeaderModifier?: HTTPHeaderFilter;
  readonly responseHeaderModifier?: HTTPHeaderFilter;
  readonly requestRedirect?: HTTPRequestRedirectFilter;
  readonly urlRewrite?: HTTPURLRewriteFilter;
  readonly requestMirror?: HTTPRequestMirrorFilter;
  readonly cors?: Readonly<Record<string, unknown>>;
  readonly externalAuth?: Readonly<Record<string, unknown>>;
  readonly extensionRef?: LocalObjectReference;
}

export interface HTTPRequestMirrorFilter {
  readonly backendRef: Omit<HTTPBackendRef, 'weight' | 'filters'>;
  /** Share of the requests, 0-100 (at most one of percent and fraction). */
  readonly percent?: number;
  readonly fraction?: { readonly numerator: number; readonly denominator?: number };
}

export interface HTTPBackendRef {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
  readonly port?: number;
  readonly weight?: number;
  readonly filters?: readonly HTTPRouteFilter[];
}

export interface HTTPRouteTimeouts {
  readonly request?: string;
  readonly backendRequest?: string;
}

/** Experimental channel (v1.6.1): present only where the experimental CRDs are installed. */
export interface HTTPRouteRetry {
  readonly codes?: readonly number[];
  readonly attempts?: number;
  readonly backoff?: string;
}

export interface HTTPRouteRule {
  readonly name?: string;
  readonly matches?: readonly HTTPRouteMatch[];
  readonly filters?: readonly HTTPRouteFilter[];
  readonly backendRefs?: readonly HTTPBackendRef[];
  readonly timeouts?: HTTPRouteTimeouts;
  readonly retry?: HTTPRouteRetry;
  /** Experimental; not supported: a rule that sets it is refused (UnsupportedValue). */
  readonly sessionPersistence?: Readonly<Record<string, unknown>>;
}

/** Where a route attaches: the spec fields HTTPRoute and GRPCRoute share. */
export interface RouteAttachmentSpec {
  readonly parentRefs?: readonly ParentReference[];
  readonly hostnames?: readonly string[];
}

export interface HTTPRoute {
  readonly apiVersion: 'gateway.networking.k8s.io/v1' | 'gateway.networking.k8s.io/v1beta1';
  readonly kind: 'HTTPRoute';
  readonly metadata: ObjectMeta;
  readonly spec: RouteAttachmentSpec & {
    readonly rules?: readonly HTTPRouteRule[];
    /** Experimental; Tollgate has no default Gateways, so it attaches nowhere by itself. */
    readonly useDefaultGateways?: string;
  };
}

// GRPCRoute ---------------------------------------------------------------------------------

/** Service and method of a gRPC request (its path is `/<service>/<method>`); at least one is set. */
export interface GRPCMethodMatch {
  readonly type?: 'Exact' | 'RegularExpression';
  readonly service?: string;
  readonly method?: string;
}

export interface GRPCRouteMatch {
  readonly method?: GRPCMethodMatch;
  readonly headers?: readonly HTTPHeaderMatch[];
}

/** RequestHeaderModifier, ResponseHeaderModifier, RequestMirror, ExtensionRef (v1.6.1): the same shapes as HTTPRoute's. */
export type GRPCRouteFilter = HTTPRouteFilter;

export interface GRPCBackendRef extends Omit<HTTPBackendRef, 'filters'> {
  readonly filters?: readonly GRPCRouteFilter[];
}

export interface GRPCRouteRule {
  readonly name?: string;
  readonly matches?: readonly GRPCRouteMatch[];
  readonly filters?: readonly GRPCRouteFilter[];
  readonly backendRefs?: readonly GRPCBackendRef[];
  /** Experimental; not supported: a rule that sets it is refused (UnsupportedValue). */
  readonly sessionPersistence?: Readonly<Record<string, unknown>>;
}

export interface GRPCRoute {
  readonly apiVersion: 'gateway.networking.k8s.io/v1';
  readonly kind: 'GRPCRoute';
  readonly metadata: ObjectMeta;
  readonly spec: RouteAttachmentSpec & { readonly rules?: readonly GRPCRouteRule[] };
}

// TLSRoute ---------------------------------------------------------------------------------

/** A TLSRoute backendRef: an HTTPRoute's without filters. */
export type TLSRouteBackendRef = Omit<HTTPBackendRef, 'filters'>;

/** Standard channel from v1.5 (v1); v1alpha2 and v1alpha3 are served by the same CRD. */
export interface TLSRoute {
  readonly apiVersion: 'gateway.networking.k8s.io/v1' | 'gateway.networking.k8s.io/v1alpha3' | 'gateway.networking.k8s.io/v1alpha2';
  readonly kind: 'TLSRoute';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly parentRefs?: readonly ParentReference[];
    readonly hostnames?: readonly string[];
    readonly rules?: readonly { readonly name?: string; readonly backendRefs?: readonly TLSRouteBackendRef[] }[];
    readonly useDefaultGateways?: string;
  };
}

// ReferenceGrant ---------------------------------------------------------------------------

export interface ReferenceGrant {
  readonly apiVersion: 'gateway.networking.k8s.io/v1' | 'gateway.networking.k8s.io/v1beta1';
  readonly kind: 'ReferenceGrant';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly from: readonly { readonly group: string; readonly kind: string; readonly namespace: string }[];
    readonly to: readonly { readonly group: string; readonly kind: string; readonly name?: string }[];
  };
}

// BackendTLSPolicy -------------------------------------------------------------------------

export interface BackendTLSPolicy {
  readonly apiVersion: 'gateway.networking.k8s.io/v1';
  readonly kind: 'BackendTLSPolicy';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly targetRefs: readonly PolicyTargetReference[];
    readonly validation: {
      readonly caCertificateRefs?: readonly LocalObjectReference[];
      readonly wellKnownCACertificates?: string;
      readonly hostname: string;
      readonly subjectAltNames?: readonly { readonly type: 'Hostname' | 'URI'; readonly hostname?: string; readonly uri?: string }[];
    };
    readonly options?: Readonly<Record<string, string>>;
  };
}

// GatewayPolicy (tollgate.dev/v1alpha1) ----------------------------------------------------

export interface PolicyTargetReference {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  /** A listener of a Gateway target; absent: the whole target. */
  readonly sectionName?: string;
}

export interface GatewayPolicy {
  readonly apiVersion: 'tollgate.dev/v1alpha1';
  readonly kind: 'GatewayPolicy';
  readonly metadata: ObjectMeta;
  readonly spec: Omit<GatewayPolicySpec, 'targetRefs' | 'traffic'> & {
    readonly targetRefs: readonly PolicyTargetReference[];
    readonly traffic?: TrafficPolicy;
  };
}

// Backend (tollgate.dev/v1alpha1) ------------------------------------------------------------

export interface TollgateBackend {
  readonly apiVersion: 'tollgate.dev/v1alpha1';
  readonly kind: 'Backend';
  readonly metadata: ObjectMeta;
  readonly spec: BackendSpec;
}
