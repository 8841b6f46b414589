// The translation contract: what the watch side hands to translate() and what it gets back.
//
// translate() is pure, synchronous and deterministic: its output depends only on its
// arguments, and the same objects in any order give byte-identical output (maps are filled in
// sorted key order). The caller owns I/O: it feeds the informer caches in, pushes `snapshots`
// to proxies and hands `status` to the status writer, which merges it with what is on the API
// server.
//
// Objects are treated as immutable: translate() remembers (by object identity, in WeakMaps)
// the work done for the objects of earlier calls and reuses it when it gets the same objects
// again, which is what informer caches hand out for unchanged objects. A changed object must
// be a new object (informers replace objects, they never edit them in place); an object edited
// in place may be translated as it was.
import type { EvaluationLimits, ProxySnapshot } from '@tollgate/api';
import type { V1ConfigMap, V1EndpointSlice, V1Namespace, V1Secret, V1Service } from '@kubernetes/client-node';
import type {
  BackendTLSPolicy,
  Gateway,
  GatewayClass,
  GatewayPolicy,
  GRPCRoute,
  HTTPRoute,
  ListenerSet,
  TLSRoute,
  ParentReference,
  ReferenceGrant,
  RouteGroupKind,
  TollgateBackend,
} from '../types/gateway-api.js';

/** Everything the controller watches, as the informer caches hold it (any order). */
export interface Resources {
  readonly gatewayClasses: readonly GatewayClass[];
  readonly gateways: readonly Gateway[];
  /** ListenerSets (any parent); absent: none. */
  readonly listenerSets?: readonly ListenerSet[];
  readonly httpRoutes: readonly HTTPRoute[];
  readonly grpcRoutes: readonly GRPCRoute[];
  /** TLSRoutes; absent: none. */
  readonly tlsRoutes?: readonly TLSRoute[];
  readonly referenceGrants: readonly ReferenceGrant[];
  readonly gatewayPolicies: readonly GatewayPolicy[];
  /** Backend resources (tollgate.dev); absent: none. */
  readonly backends: readonly TollgateBackend[];
  readonly backendTLSPolicies: readonly BackendTLSPolicy[];
  readonly services: readonly V1Service[];
  readonly endpointSlices: readonly V1EndpointSlice[];
  readonly namespaces: readonly V1Namespace[];
  /**
   * Secrets read whole: those HTTPS listeners' certificateRefs and GatewayPolicies name or
   * select (references.ts); the watch holds every other one's metadata only.
   */
  readonly secrets: readonly V1Secret[];
  /** ConfigMaps read whole: those parametersRefs and GatewayPolicies name (references.ts). */
  readonly configMaps: readonly V1ConfigMap[];
}

export interface TranslateOptions {
  /** GatewayClass spec.controllerName this controller serves, e.g. tollgate.dev/gateway-controller. */
  readonly controllerName: string;
  /**
   * `gateway.networking.k8s.io/bundle-version` of the installed Gateway API CRDs (e.g.
   * v1.6.1), read once by the caller; absent: not known, GatewayClass SupportedVersion Unknown.
   */
  readonly gatewayApiVersion?: string;
  /**
   * Bounds on the routes' regular expressions and the policies' CEL expressions (the
   * controller's --regex-* and --cel-* flags); default DEFAULT_LIMITS. One object for the life
   * of the process: results are reused while it is the same object.
   */
  readonly limits?: EvaluationLimits;
  /**
   * The images a Gateway may choose for its proxies (--gateway-proxy-images: references and
   * prefixes, proxy-settings/image-policy.ts); absent or empty: none, the image is the admin's alone.
   */
  readonly gatewayProxyImages?: readonly string[];
  /**
   * Domains of the label and annotation keys a Gateway may not set in spec.infrastructure
   * (--gateway-infrastructure-denied-domains, subdomains included, checked); absent: the
   * default list (proxy-settings/infrastructure.ts).
   */
  readonly gatewayInfrastructureDeniedDomains?: readonly string[];
}

export interface TranslateResult {
  /**
   * One snapshot per Gateway this controller serves (its class is ours and Accepted), keyed by
   * `<namespace>/<name>`, in sorted key order. A Gateway whose routes are all broken still has a
   * snapshot (with the listeners and nothing routed), so the proxies answer 404 rather than
   * keeping stale routes.
   */
  readonly snapshots: ReadonlyMap<string, ProxySnapshot>;
  readonly status: StatusReport;
}

export type Translate = (resources: Resources, options: TranslateOptions) => TranslateResult;

// Status ------------------------------------------------------------------------------------

/**
 * A metav1.Condition without lastTransitionTime: the status writer keeps the time of a
 * condition whose status did not change and stamps a new one otherwise.
 */
export interface DesiredCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  /** CamelCase, from the Gateway API (or GatewayPolicy) reason list. */
  readonly reason: string;
  readonly message: string;
  /** metadata.generation of the object the condition was computed from. */
  readonly observedGeneration: number;
}

/** Keyed by `<name>` (cluster-scoped). Only classes whose controllerName is ours. */
export interface GatewayClassStatusReport {
  readonly name: string;
  readonly generation: number;
  /** Accepted, SupportedVersion. */
  readonly conditions: readonly DesiredCondition[];
  /** status.supportedFeatures (GEP-2162), sorted; empty while the class is not accepted. */
  readonly supportedFeatures: readonly string[];
}

export interface ListenerStatusReport {
  readonly name: string;
  readonly supportedKinds: readonly Required<RouteGroupKind>[];
  readonly attachedRoutes: number;
  /** Accepted, Programmed, ResolvedRefs, Conflicted. */
  readonly conditions: readonly DesiredCondition[];
}

/** The object a status report is for: which one, and the generation it was computed from. */
export interface ReportedObject {
  readonly namespace: string;
  readonly name: string;
  readonly generation: number;
}

/** Keyed by `<namespace>/<name>`. Only Gateways whose class is ours. */
export interface GatewayStatusReport extends ReportedObject {
  /**
   * Accepted, Programmed. Translation reports Programmed False/Pending (nothing proves a proxy
   * applied the snapshot yet); the writer overrides it from proxy readiness once that exists.
   */
  readonly conditions: readonly DesiredCondition[];
  /** In spec order. */
  readonly listeners: readonly ListenerStatusReport[];
  /** status.attachedListenerSets: the ListenerSets accepted on this Gateway (absent: no ListenerSet names it). */
  readonly attachedListenerSets?: number;
  /**
   * The listeners the accepted ListenerSets add (port and protocol, precedence order): the
   * deployer's Service and pods expose their ports too. Not written to the Gateway's status.
   * Absent: none.
   */
  readonly listenerSetPorts?: readonly { readonly port: number; readonly protocol: string }[];
}

/**
 * Keyed by `<namespace>/<name>`: every ListenerSet whose parentRef names a Gateway this
 * controller serves. Conditions Accepted and Programmed; Programmed False/Pending is replaced
 * by the writer with the parent Gateway's verdict, as on the Gateway.
 */
export interface ListenerSetStatusReport extends ReportedObject {
  /** `<namespace>/<name>` of the parent Gateway, whose proxies serve the listeners. */
  readonly gateway: string;
  readonly conditions: readonly DesiredCondition[];
  /** In spec order; empty while the ListenerSet is not allowed. */
  readonly listeners: readonly ListenerStatusReport[];
}

/** One controller's entry in a status list other controllers may share (route parents, policy ancestors). */
export interface ControllerEntry {
  readonly controllerName: string;
  readonly conditions: readonly DesiredCondition[];
}

/** Conditions: Accepted, ResolvedRefs. */
export interface RouteParentStatusReport extends ControllerEntry {
  /** The parentRef as written in the route, defaults filled in (group, kind, namespace). */
  readonly parentRef: ParentReference;
}

/**
 * Keyed by `<namespace>/<name>`; every HTTPRoute in the resources is present. `parents` holds
 * this controller's entries only: the writer replaces the entries whose controllerName is ours
 * with these (removing ours no longer listed) and keeps other controllers' entries.
 */
export interface HTTPRouteStatusReport extends ReportedObject {
  readonly parents: readonly RouteParentStatusReport[];
}

export interface PolicyAncestorReference {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly sectionName?: string;
}

/** Conditions: Accepted, Attached. */
export interface PolicyAncestorStatusReport extends ControllerEntry {
  readonly ancestorRef: PolicyAncestorReference;
}

/**
 * Keyed by `<namespace>/<name>`; every GatewayPolicy in the resources is present. `ancestors`
 * holds this controller's entries only (at most 16), merged by the writer as for routes.
 */
export interface GatewayPolicyStatusReport extends ReportedObject {
  readonly ancestors: readonly PolicyAncestorStatusReport[];
}

/**
 * Keyed by `<namespace>/<name>`: the BackendTLSPolicies whose targets our Gateways route to.
 * `ancestors`: one entry per such Gateway (conditions Accepted, ResolvedRefs), merged by the
 * writer as for GatewayPolicies.
 */
export type BackendTLSPolicyStatusReport = GatewayPolicyStatusReport;

export interface StatusReport {
  readonly gatewayClasses: ReadonlyMap<string, GatewayClassStatusReport>;
  readonly gateways: ReadonlyMap<string, GatewayStatusReport>;
  /** The ListenerSets naming Gateways of ours; absent: none does. */
  readonly listenerSets?: ReadonlyMap<string, ListenerSetStatusReport>;
  readonly httpRoutes: ReadonlyMap<string, HTTPRouteStatusReport>;
  /** Every GRPCRoute of the resources, keyed by `<namespace>/<name>` (translate() always sets it); the same shape as an HTTPRoute's. */
  readonly grpcRoutes?: ReadonlyMap<string, HTTPRouteStatusReport>;
  /** Every TLSRoute of the resources, as for HTTPRoutes (translate() always sets it). */
  readonly tlsRoutes?: ReadonlyMap<string, HTTPRouteStatusReport>;
  readonly gatewayPolicies: ReadonlyMap<string, GatewayPolicyStatusReport>;
  readonly backendTLSPolicies: ReadonlyMap<string, BackendTLSPolicyStatusReport>;
  /** Every Backend of the resources, keyed by `<namespace>/<name>` (translate() always sets it). */
  readonly backends?: ReadonlyMap<string, BackendStatusReport>;
}

/** Conditions: Accepted. */
export interface BackendStatusReport extends ReportedObject {
  readonly conditions: readonly DesiredCondition[];
}
