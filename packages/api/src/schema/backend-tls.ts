// `tls` of a standalone backend: how the proxy speaks TLS to it. The same settings as a
// Gateway API BackendTLSPolicy (hostname, subjectAltNames, trusted CAs) plus the proxy's own
// client certificate and minimum protocol version; both front ends convert to BackendTLSIR.
import { Type, type Static } from '@sinclair/typebox';
import { Enum, PreciseHostname } from './common.js';
import { CertificateFilesConfig } from './certificate-files.js';

/** Gateway API's pattern for a SubjectAltName URI (RFC 3986, with a scheme and an authority). */
export const SAN_URI_PATTERN = '^(([^:/?#]+):)(//([^/?#]*))([^?#]*)(\\?([^#]*))?(#(.*))?$';

export const SubjectAltNameConfig = Type.Object(
  {
    type: Enum(['Hostname', 'URI'], 'Which kind of name: Hostname (a DNS name of the certificate) or URI (a URI name, e.g. a SPIFFE ID).'),
    hostname: Type.Optional(PreciseHostname('The DNS name to accept (type Hostname).')),
    uri: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, pattern: SAN_URI_PATTERN, description: 'The URI name to accept, exactly (type URI).', expected: 'an absolute URI with a scheme and an authority, e.g. spiffe://cluster.local/ns/ai/sa/vllm' }),
    ),
  },
  { additionalProperties: false, description: 'A subject alternative name the backend certificate may carry.' },
);
export type SubjectAltNameConfig = Static<typeof SubjectAltNameConfig>;

export const BackendTlsConfig = Type.Object(
  {
    caFile: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4096, description: 'PEM bundle of the CA certificates that may sign the backend certificate; a relative path is relative to the config file. Default: the system roots.' }),
    ),
    hostname: Type.Optional(PreciseHostname('Sent as SNI and checked against the certificate (unless subjectAltNames is set). Default: the host part of host.')),
    subjectAltNames: Type.Optional(
      Type.Array(SubjectAltNameConfig, { minItems: 1, maxItems: 5, description: 'The certificate must carry one of these names; when set, they replace hostname in the check (hostname stays the SNI).' }),
    ),
    clientCertificate: Type.Optional(CertificateFilesConfig),
    minVersion: Type.Optional(Enum(['TLSv1.2', 'TLSv1.3'], 'Lowest TLS version offered; default TLSv1.2.')),
  },
  { additionalProperties: false, description: 'TLS to the backend: the proxy connects with TLS and verifies the certificate. Absent: plain HTTP.' },
);
export type BackendTlsConfig = Static<typeof BackendTlsConfig>;
