// JSON Schemas of the objects translation reads, written from the Gateway API v1.6.1 standard
// CRDs, the GatewayPolicy CRD and the core v1/discovery v1 types, with every object closed
// (additionalProperties false). parseObject() reads a Kubernetes object strictly: an unknown
// kind or field is an error naming it, so a golden test input cannot say what it does not mean.
import { Type, type TSchema } from '@sinclair/typebox';
import { BackendSpec, compile, FailoverPolicy, TrafficPolicy, ValidationError, type Validator } from '@tollgate/api';
import type { V1ConfigMap, V1EndpointSlice, V1Namespace, V1Secret, V1Service } from '@kubernetes/client-node';
import type { BackendTLSPolicy, Gateway, GatewayClass, GatewayPolicy, GRPCRoute, HTTPRoute, ListenerSet, ReferenceGrant, TLSRoute, TollgateBackend } from './gateway-api.js';

const Obj = <P extends Record<string, TSchema>>(properties: P) => Type.Object(properties, { additionalProperties: false });
const Opt = <T extends TSchema>(t: T) => Type.Optional(t);
const Str = (options?: Parameters<typeof Type.String>[0]) => Type.String(options);
const Int = (options?: Parameters<typeof Type.Integer>[0]) => Type.Integer(options);
const Strings = Type.Array(Type.String());
const StringMap = Type.Record(Type.String(), Type.String());

const Metadata = Obj({
  name: Str({ minLength: 1 }),
  namespace: Opt(Str({ minLength: 1 })),
  generation: Opt(Int({ minimum: 0 })),
  creationTimestamp: Opt(Str({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$', expected: 'an RFC 3339 UTC time, e.g. 2026-01-02T03:04:05Z' })),
  labels: Opt(StringMap),
  annotations: Opt(StringMap),
  uid: Opt(Str()),
  resourceVersion: Opt(Str()),
});

const LabelSelector = Obj({
  matchLabels: Opt(StringMap),
  matchExpressions: Opt(Type.Array(Obj({ key: Str(), operator: Type.Union(['In', 'NotIn', 'Exists', 'DoesNotExist'].map((o) => Type.Literal(o))), values: Opt(Strings) }))),
});

const GatewayApiVersion = Type.Union([Type.Literal('gateway.networking.k8s.io/v1'), Type.Literal('gateway.networking.k8s.io/v1beta1')]);
const Ref = { group: Opt(Str()), kind: Opt(Str()), name: Str(), namespace: Opt(Str()) };

const GatewayClassSchema = Obj({
  apiVersion: GatewayApiVersion,
  kind: Type.Literal('GatewayClass'),
  metadata: Metadata,
  spec: Obj({ controllerName: Str(), description: Opt(Str()), parametersRef: Opt(Obj({ group: Str(), kind: Str(), name: Str(), namespace: Opt(Str()) })) }),
});

const CaValidation = Obj({
  caCertificateRefs: Type.Array(Obj({ group: Str(), kind: Str(), name: Str(), namespace: Opt(Str()) })),
  mode: Opt(Type.Union([Type.Literal('AllowValidOnly'), Type.Literal('AllowInsecureFallback')])),
});

const ListenerSchema = Obj({
  name: Str({ minLength: 1 }),
  hostname: Opt(Str()),
  port: Int({ minimum: 1, maximum: 65535 }),
  protocol: Str(),
  tls: Opt(Obj({ mode: Opt(Type.Union([Type.Literal('Terminate'), Type.Literal('Passthrough')])), certificateRefs: Opt(Type.Array(Obj(Ref))), options: Opt(StringMap) })),
  allowedRoutes: Opt(
    Obj({
      namespaces: Opt(Obj({ from: Opt(Type.Union(['All', 'Same', 'Selector'].map((f) => Type.Literal(f)))), selector: Opt(LabelSelector) })),
      kinds: Opt(Type.Array(Obj({ group: Opt(Str()), kind: Str() }))),
    }),
  ),
});

const GatewaySchema = Obj({
  apiVersion: GatewayApiVersion,
  kind: Type.Literal('Gateway'),
  metadata: Metadata,
  spec: Obj({
    gatewayClassName: Str(),
    // Experimental channel (v1.6.1); Tollgate has no default Gateways: not read.
    defaultScope: Opt(Str()),
    addresses: Opt(Type.Array(Obj({ type: Opt(Str()), value: Opt(Str()) }))),
    allowedListeners: Opt(Obj({ namespaces: Opt(Obj({ from: Opt(Str()), selector: Opt(LabelSelector) })) })),
    infrastructure: Opt(Obj({ labels: Opt(StringMap), annotations: Opt(StringMap), parametersRef: Opt(Obj({ group: Str(), kind: Str(), name: Str() })) })),
    tls: Opt(
      Obj({
        backend: Opt(Obj({ clientCertificateRef: Opt(Obj(Ref)) })),
        frontend: Opt(Obj({ default: Obj({ validation: Opt(CaValidation) }), perPort: Opt(Type.Array(Obj({ port: Int(), tls: Obj({ validation: Opt(CaValidation) }) }))) })),
      }),
    ),
    listeners: Type.Array(ListenerSchema, { minItems: 1, maxItems: 64 }),
  }),
});

const ValueMatch = Obj({ type: Opt(Type.Union([Type.Literal('Exact'), Type.Literal('RegularExpression')])), name: Str(), value: Str() });
const HeaderFilter = Obj({ set: Opt(Type.Array(Obj({ name: Str(), value: Str() }))), add: Opt(Type.Array(Obj({ name: Str(), value: Str() }))), remove: Opt(Strings) });
const PathModifier = Obj({ type: Type.Union([Type.Literal('ReplaceFullPath'), Type.Literal('ReplacePrefixMatch')]), replaceFullPath: Opt(Str()), replacePrefixMatch: Opt(Str()) });
const BackendObjectRef = { group: Opt(Str()), kind: Opt(Str()), name: Str(), namespace: Opt(Str()), port: Opt(Int({ minimum: 1, maximum: 65535 })) };
const Filter = Obj({
  type: Type.Union(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestMirror', 'RequestRedirect', 'URLRewrite', 'ExtensionRef', 'CORS', 'ExternalAuth'].map((t) => Type.Literal(t))),
  requestHeaderModifier: Opt(HeaderFilter),
  responseHeaderModifier: Opt(HeaderFilter),
  requestRedirect: Opt(
    Obj({
      scheme: Opt(Type.Union([Type.Literal('http'), Type.Literal('https')])),
      hostname: Opt(Str()),
      path: Opt(PathModifier),
      port: Opt(Int({ minimum: 1, maximum: 65535 })),
      statusCode: Opt(Type.Union([301, 302, 303, 307, 308].map((c) => Type.Literal(c)))),
    }),
  ),
  urlRewrite: Opt(Obj({ hostname: Opt(Str()), path: Opt(PathModifier) })),
  requestMirror: Opt(Obj({ backendRef: Obj(BackendObjectRef), percent: Opt(Int()), fraction: Opt(Obj({ numerator: Int(), denominator: Opt(Int()) })) })),
  cors: Opt(
    Obj({
      allowOrigins: Opt(Strings),
      allowCredentials: Opt(Type.Boolean()),
      allowMethods: Opt(Strings),
      allowHeaders: Opt(Strings),
      exposeHeaders: Opt(Strings),
      maxAge: Opt(Int()),
    }),
  ),
  extensionRef: Opt(Obj({ group: Str(), kind: Str(), name: Str() })),
  // Experimental channel; the filter is not supported (the route says so), its fields not read.
  externalAuth: Opt(Type.Record(Type.String(), Type.Unknown())),
});

/** Where a route attaches (HTTPRoute and GRPCRoute alike). */
const RouteAttachment = {
  parentRefs: Opt(Type.Array(Obj({ ...Ref, sectionName: Opt(Str()), port: Opt(Int({ minimum: 1, maximum: 65535 })) }), { maxItems: 32 })),
  hostnames: Opt(Type.Array(Str(), { maxItems: 16 })),
};
const WeightedBackendRefs = Opt(Type.Array(Obj({ ...BackendObjectRef, weight: Opt(Int({ minimum: 0, maximum: 1_000_000 })), filters: Opt(Type.Array(Filter)) }), { maxItems: 16 }));

/**
 * A route's rules (HTTPRoute and GRPCRoute alike): a name, matches of the kind's `match`
 * fields, filters, weighted backendRefs, session persistence, and the kind's `extra` fields.
 */
function routeRules<M extends Record<string, TSchema>, E extends Record<string, TSchema>>(match: M, extra: E) {
  return Opt(
    Type.Array(
      Obj({
        name: Opt(Str()),
        matches: Opt(Type.Array(Obj(match), { maxItems: 64 })),
        filters: Opt(Type.Array(Filter, { maxItems: 16 })),
        backendRefs: WeightedBackendRefs,
        sessionPersistence: Opt(Type.Record(Type.String(), Type.Unknown())),
        ...extra,
      }),
      { maxItems: 16 },
    ),
  );
}

const HTTPRouteSchema = Obj({
  apiVersion: GatewayApiVersion,
  kind: Type.Literal('HTTPRoute'),
  metadata: Metadata,
  spec: Obj({
    ...RouteAttachment,
    rules: routeRules(
      {
        path: Opt(Obj({ type: Opt(Type.Union(['Exact', 'PathPrefix', 'RegularExpression'].map((t) => Type.Literal(t)))), value: Opt(Str()) })),
        headers: Opt(Type.Array(ValueMatch)),
        queryParams: Opt(Type.Array(ValueMatch)),
        method: Opt(Type.Union(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'].map((m) => Type.Literal(m)))),
      },
      {
        timeouts: Opt(Obj({ request: Opt(Str()), backendRequest: Opt(Str()) })),
        // Experimental channel (v1.6.1): present only where the experimental CRDs are installed.
        retry: Opt(Obj({ codes: Opt(Type.Array(Int(), { maxItems: 64 })), attempts: Opt(Int()), backoff: Opt(Str()) })),
      },
    ),
    useDefaultGateways: Opt(Str()),
  }),
});

const GRPCRouteSchema = Obj({
  apiVersion: Type.Literal('gateway.networking.k8s.io/v1'),
  kind: Type.Literal('GRPCRoute'),
  metadata: Metadata,
  spec: Obj({
    ...RouteAttachment,
    rules: routeRules(
      {
        method: Opt(Obj({ type: Opt(Type.Union([Type.Literal('Exact'), Type.Literal('RegularExpression')])), service: Opt(Str()), method: Opt(Str()) })),
        headers: Opt(Type.Array(ValueMatch, { maxItems: 16 })),
      },
      {},
    ),
  }),
});

const ReferenceGrantSchema = Obj({
  apiVersion: GatewayApiVersion,
  kind: Type.Literal('ReferenceGrant'),
  metadata: Metadata,
  spec: Obj({
    from: Type.Array(Obj({ group: Str(), kind: Str(), namespace: Str() }), { minItems: 1, maxItems: 16 }),
    to: Type.Array(Obj({ group: Str(), kind: Str(), name: Opt(Str()) }), { minItems: 1, maxItems: 16 }),
  }),
});

const BackendTLSPolicySchema = Obj({
  apiVersion: Type.Literal('gateway.networking.k8s.io/v1'),
  kind: Type.Literal('BackendTLSPolicy'),
  metadata: Metadata,
  spec: Obj({
    targetRefs: Type.Array(Obj({ group: Str(), kind: Str(), name: Str(), sectionName: Opt(Str()) }), { minItems: 1, maxItems: 16 }),
    validation: Obj({
      caCertificateRefs: Opt(Type.Array(Obj({ group: Str(), kind: Str(), name: Str() }), { maxItems: 8 })),
      wellKnownCACertificates: Opt(Str()),
      hostname: Str({ minLength: 1, maxLength: 253 }),
      subjectAltNames: Opt(Type.Array(Obj({ type: Type.Union([Type.Literal('Hostname'), Type.Literal('URI')]), hostname: Opt(Str()), uri: Opt(Str()) }), { maxItems: 5 })),
    }),
    options: Opt(StringMap),
  }),
});

const GatewayPolicySchema = Obj({
  apiVersion: Type.Literal('tollgate.dev/v1alpha1'),
  kind: Type.Literal('GatewayPolicy'),
  metadata: Metadata,
  spec: Obj({
    targetRefs: Type.Array(Obj({ group: Str(), kind: Str(), name: Str(), sectionName: Opt(Str()) }), { minItems: 1, maxItems: 16 }),
    traffic: Opt(TrafficPolicy),
    failover: Opt(FailoverPolicy),
  }),
});

const BackendSchema = Obj({
  apiVersion: Type.Literal('tollgate.dev/v1alpha1'),
  kind: Type.Literal('Backend'),
  metadata: Metadata,
  spec: BackendSpec,
});

const ServiceSchema = Obj({
  apiVersion: Type.Literal('v1'),
  kind: Type.Literal('Service'),
  metadata: Metadata,
  spec: Obj({
    type: Opt(Type.Union(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'].map((t) => Type.Literal(t)))),
    clusterIP: Opt(Str()),
    selector: Opt(StringMap),
    externalName: Opt(Str()),
    ports: Opt(
      Type.Array(
        Obj({
          name: Opt(Str()),
          protocol: Opt(Str()),
          appProtocol: Opt(Str()),
          port: Int({ minimum: 1, maximum: 65535 }),
          targetPort: Opt(Type.Union([Int(), Str()])),
          nodePort: Opt(Int()),
        }),
      ),
    ),
  }),
});

const EndpointSliceSchema = Obj({
  apiVersion: Type.Literal('discovery.k8s.io/v1'),
  kind: Type.Literal('EndpointSlice'),
  metadata: Metadata,
  addressType: Type.Union([Type.Literal('IPv4'), Type.Literal('IPv6'), Type.Literal('FQDN')]),
  endpoints: Type.Array(
    Obj({
      addresses: Type.Array(Str(), { minItems: 1 }),
      conditions: Opt(Obj({ ready: Opt(Type.Boolean()), serving: Opt(Type.Boolean()), terminating: Opt(Type.Boolean()) })),
      nodeName: Opt(Str()),
      zone: Opt(Str()),
      hostname: Opt(Str()),
    }),
  ),
  ports: Opt(Type.Array(Obj({ name: Opt(Str()), port: Opt(Int()), protocol: Opt(Str()), appProtocol: Opt(Str()) }))),
});

const SecretSchema = Obj({
  apiVersion: Type.Literal('v1'),
  kind: Type.Literal('Secret'),
  metadata: Metadata,
  type: Opt(Str()),
  data: Opt(StringMap),
});

const ConfigMapSchema = Obj({
  apiVersion: Type.Literal('v1'),
  kind: Type.Literal('ConfigMap'),
  metadata: Metadata,
  data: Opt(StringMap),
  binaryData: Opt(StringMap),
});

// ListenerSet (v1, standard channel at v1.6.1): listeners another namespace adds to a Gateway that allows it.
const ListenerSetSchema = Obj({
  apiVersion: Type.Literal('gateway.networking.k8s.io/v1'),
  kind: Type.Literal('ListenerSet'),
  metadata: Metadata,
  spec: Obj({
    parentRef: Obj({ group: Opt(Str()), kind: Opt(Str()), name: Str(), namespace: Opt(Str()) }),
    listeners: Type.Array(ListenerSchema, { minItems: 1, maxItems: 64 }),
  }),
});

const NamespaceSchema = Obj({ apiVersion: Type.Literal('v1'), kind: Type.Literal('Namespace'), metadata: Metadata });

const TLSRouteSchema = Obj({
  apiVersion: Type.Union(['v1', 'v1alpha3', 'v1alpha2'].map((v) => Type.Literal(`gateway.networking.k8s.io/${v}`))),
  kind: Type.Literal('TLSRoute'),
  metadata: Metadata,
  spec: Obj({
    parentRefs: Opt(Type.Array(Obj({ ...Ref, sectionName: Opt(Str()), port: Opt(Int({ minimum: 1, maximum: 65535 })) }), { maxItems: 32 })),
    hostnames: Opt(Type.Array(Str(), { maxItems: 16 })),
    rules: Opt(Type.Array(Obj({ name: Opt(Str()), backendRefs: Opt(Type.Array(Obj({ ...Ref, port: Opt(Int()), weight: Opt(Int()) }), { maxItems: 16 })) }), { maxItems: 16 })),
    useDefaultGateways: Opt(Str()),
  }),
});

const VALIDATORS = {
  GatewayClass: compile(GatewayClassSchema),
  Gateway: compile(GatewaySchema),
  ListenerSet: compile(ListenerSetSchema),
  HTTPRoute: compile(HTTPRouteSchema),
  GRPCRoute: compile(GRPCRouteSchema),
  TLSRoute: compile(TLSRouteSchema),
  ReferenceGrant: compile(ReferenceGrantSchema),
  GatewayPolicy: compile(GatewayPolicySchema),
  Backend: compile(BackendSchema),
  BackendTLSPolicy: compile(BackendTLSPolicySchema),
  Service: compile(ServiceSchema),
  EndpointSlice: compile(EndpointSliceSchema),
  Namespace: compile(NamespaceSchema),
  Secret: compile(SecretSchema),
  ConfigMap: compile(ConfigMapSchema),
} satisfies Record<string, Validator<unknown>>;

export type KnownKind = keyof typeof VALIDATORS;
export const KNOWN_KINDS = Object.keys(VALIDATORS) as KnownKind[];

/** The objects parseObject() returns, each typed as translation reads it. */
export type KnownObject =
  | { kind: 'GatewayClass'; object: GatewayClass }
  | { kind: 'Gateway'; object: Gateway }
  | { kind: 'ListenerSet'; object: ListenerSet }
  | { kind: 'HTTPRoute'; object: HTTPRoute }
  | { kind: 'GRPCRoute'; object: GRPCRoute }
  | { kind: 'TLSRoute'; object: TLSRoute }
  | { kind: 'ReferenceGrant'; object: ReferenceGrant }
  | { kind: 'GatewayPolicy'; object: GatewayPolicy }
  | { kind: 'Backend'; object: TollgateBackend }
  | { kind: 'BackendTLSPolicy'; object: BackendTLSPolicy }
  | { kind: 'Service'; object: V1Service }
  | { kind: 'EndpointSlice'; object: V1EndpointSlice }
  | { kind: 'Namespace'; object: V1Namespace }
  | { kind: 'Secret'; object: V1Secret }
  | { kind: 'ConfigMap'; object: V1ConfigMap };

/** Validates one Kubernetes object strictly; throws a ValidationError naming each bad field. */
export function parseObject(value: unknown, subject: string): KnownObject {
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (typeof kind !== 'string' || !(kind in VALIDATORS))
    throw new ValidationError(subject, [{ path: 'kind', message: `got ${JSON.stringify(kind)}; expected one of: ${KNOWN_KINDS.join(', ')}` }]);
  const result = VALIDATORS[kind as KnownKind](value);
  if (!result.ok) throw new ValidationError(subject, result.problems);
  return { kind, object: result.value } as KnownObject;
}
