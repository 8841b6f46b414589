// The Backend resource (tollgate.dev/v1alpha1): a host name (or address) and port outside the
// cluster or in it, with TLS and an LLM provider, named by an HTTPRoute backendRef
// (group tollgate.dev, kind Backend). Its status says whether it is accepted and why not.
import { Type, type Static } from '@sinclair/typebox';
import { Enum, Host, Port, PreciseHostname } from './common.js';
import { ProviderResourceConfig } from '../provider/schema.js';

const CONFIGMAP_NAME = { minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$', expected: 'a Kubernetes object name' };

export const BackendSubjectAltName = Type.Object(
  {
    type: Enum(['Hostname', 'URI'], 'Hostname: a DNS name of the certificate; URI: a URI SAN (a SPIFFE ID).'),
    hostname: Type.Optional(PreciseHostname('The DNS name the certificate must carry (type Hostname).')),
    uri: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: '^[a-zA-Z][a-zA-Z0-9+.-]*:[^\\s]*$', expected: 'an absolute URI', description: 'The URI the certificate must carry (type URI).' })),
  },
  {
    additionalProperties: false,
    description: 'A subject alternative name to accept.',
    'x-kubernetes-validations': [{ rule: "self.type == 'Hostname' ? (has(self.hostname) && !has(self.uri)) : (has(self.uri) && !has(self.hostname))", message: 'type Hostname takes hostname, type URI takes uri' }],
  },
);

export const BackendTlsSpec = Type.Object(
  {
    caCertificateRefs: Type.Optional(
      Type.Array(
        Type.Object({ name: Type.String({ ...CONFIGMAP_NAME, description: 'Name of a ConfigMap of the Backend\'s namespace holding PEM certificates under ca.crt.' }) }, { additionalProperties: false, description: 'A ConfigMap of CA certificates.' }),
        { maxItems: 8, description: 'ConfigMaps (key ca.crt) whose certificates are trusted; absent: the system roots.' },
      ),
    ),
    hostname: Type.Optional(PreciseHostname('SNI name sent and the name checked against the certificate; default spec.hostname (when it is a name).')),
    subjectAltNames: Type.Optional(Type.Array(BackendSubjectAltName, { maxItems: 16, description: 'Names the certificate may carry instead of hostname; any one suffices.' })),
    minVersion: Type.Optional(Enum(['TLSv1.2', 'TLSv1.3'], 'Lowest TLS version accepted; default TLSv1.2.')),
  },
  { additionalProperties: false, description: 'TLS to the backend (HTTPS); absent: plain HTTP.' },
);
export type BackendTlsSpec = Static<typeof BackendTlsSpec>;

export const BackendSpec = Type.Object(
  {
    hostname: Host('DNS name (resolved by the proxies, cached for its TTL) or IP address of the backend. The GatewayClass\'s parameters may restrict the names allowed (backendHosts).'),
    port: Port('Port of the backend.'),
    tls: Type.Optional(BackendTlsSpec),
    provider: Type.Optional(ProviderResourceConfig),
  },
  { additionalProperties: false, description: 'Where the backend is and what it is.' },
);
export type BackendSpec = Static<typeof BackendSpec>;

export const BackendCondition = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 316, description: 'Type of the condition: Accepted (the Backend is valid and the objects it names can be read).' }),
    status: Enum(['True', 'False', 'Unknown'], 'Status of the condition.'),
    reason: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$', description: 'CamelCase reason: Accepted, Invalid, InvalidSecretRef, InvalidConfigMapRef, RefNotPermitted.' }),
    message: Type.String({ maxLength: 32768, description: 'Human-readable details.' }),
    lastTransitionTime: Type.String({ format: 'date-time', description: 'When the condition last changed status.' }),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: 'metadata.generation the condition was computed from.' })),
  },
  { additionalProperties: false, description: 'One observation about the Backend, in the metav1.Condition shape.' },
);

export const BackendStatus = Type.Object(
  { conditions: Type.Optional(Type.Array(BackendCondition, { maxItems: 8, description: 'Conditions of the Backend (Accepted).' })) },
  { additionalProperties: false, description: 'Status of the Backend, written by the Tollgate controller.' },
);
