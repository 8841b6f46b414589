// An outbound target named by a policy: a Service port (cluster) or `<host>:<port>`
// (standalone). Every outbound target a GatewayPolicy names is a backendRef.
import { Type } from '@sinclair/typebox';
import { HostPort } from './common.js';

export const BackendRef = Type.Object(
  {
    group: Type.Optional(
      Type.String({
        maxLength: 253,
        pattern: '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
        description: 'API group of the referent; default "" (the core group of Service).',
        expected: 'an API group name, or "" for the core group',
      }),
    ),
    kind: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        pattern: '^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$',
        description: 'Kind of the referent; default Service (the only kind supported).',
        expected: 'a kind name such as Service',
      }),
    ),
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Name of the Service.' }),
    namespace: Type.Optional(
      Type.String({ minLength: 1, maxLength: 63, description: 'Namespace of the Service; default the policy namespace. Another namespace needs a ReferenceGrant there that allows GatewayPolicies of the policy namespace.' }),
    ),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'Port of the Service.' }),
  },
  {
    additionalProperties: false,
    description: 'An object of the cluster that serves the target: a Service (not of type ExternalName). In a cluster this is the only way a policy names an outbound target.',
  },
);

/** Where a policy's service listens (a rate limit service, an authorization service). */
export const RateLimitService = Type.Object(
  {
    host: Type.Optional(HostPort('Address of the rate limit service; standalone config only (a GatewayPolicy with host is not accepted: use backendRef).')),
    backendRef: Type.Optional(BackendRef),
  },
  {
    additionalProperties: false,
    description: 'Where the Envoy-compatible rate limit service (gRPC) listens: host or backendRef.',
    'x-kubernetes-validations': [{ rule: 'has(self.host) != has(self.backendRef)', message: 'exactly one of host or backendRef must be set' }],
  },
);


/** Where another service a policy calls listens: `host` (standalone) or `backendRef` (cluster). */
export const ServiceAddress = (what: string) =>
  Type.Object(
    {
      host: Type.Optional(HostPort(`Address of the ${what}; standalone config only (a GatewayPolicy with host is not accepted: use backendRef).`)),
      backendRef: Type.Optional(BackendRef),
    },
    {
      additionalProperties: false,
      description: `Where the ${what} listens: host or backendRef.`,
      'x-kubernetes-validations': [{ rule: 'has(self.host) != has(self.backendRef)', message: 'exactly one of host or backendRef must be set' }],
    },
  );
