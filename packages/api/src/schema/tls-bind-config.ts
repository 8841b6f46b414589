// TLS binds of the standalone config: ports whose connections are routed by the server name
// (SNI) of their ClientHello, the shape of Gateway API listeners of protocol TLS with their
// TLSRoutes. Passthrough sends the client's TLS to the backend untouched; Terminate completes
// the handshake here with the listener's certificates and sends the plaintext.
import { Type, type Static } from '@sinclair/typebox';
import { Host, HostPort, Hostname, Port } from './common.js';
import { CertificateFilesConfig } from './certificate-files.js';

const Name = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$', description, expected: 'letters, digits, "-", "_" and ".", starting and ending with a letter or digit' });

export const TlsRouteConfig = Type.Object(
  {
    name: Name('Route name, unique within its listener.'),
    hostnames: Type.Optional(Type.Array(Hostname('Server name (SNI) this route serves; "*." wildcards allowed.'), { maxItems: 16, description: 'Server names; default every name of the listener.' })),
    backends: Type.Array(
      Type.Object(
        {
          host: HostPort('Backend host:port; the connection goes there as it is (Passthrough: the client\'s TLS; Terminate: the plaintext).'),
          weight: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Share of connections; default 1; 0 sends none.' })),
        },
        { additionalProperties: false, description: 'A backend of a TLS route.' },
      ),
      { minItems: 1, maxItems: 64, description: 'Backends, sharing the connections by weight.' },
    ),
  },
  { additionalProperties: false, description: 'A TLS route: connections whose server name matches go to its backends.' },
);
export type TlsRouteConfig = Static<typeof TlsRouteConfig>;

export const TlsListenerConfig = Type.Object(
  {
    name: Name('Listener name, unique within the config (HTTP listeners included).'),
    hostname: Type.Optional(Hostname('Server name this listener serves; default every name.')),
    tls: Type.Union([
      Type.Object({ mode: Type.Literal('Passthrough') }, { additionalProperties: false, description: 'The client\'s TLS goes to the backend; the proxy never decrypts.' }),
      Type.Object(
        { mode: Type.Literal('Terminate'), certificates: Type.Array(CertificateFilesConfig, { minItems: 1, maxItems: 16, description: 'Certificates the listener offers.' }) },
        { additionalProperties: false, description: 'TLS terminated here; the plaintext stream goes to the backend.' },
      ),
    ]),
    routes: Type.Array(TlsRouteConfig, { maxItems: 1000, description: 'Routes of the listener, in precedence order.' }),
  },
  { additionalProperties: false, description: 'A TLS listener.' },
);
export type TlsListenerConfig = Static<typeof TlsListenerConfig>;

export const TlsBindConfig = Type.Object(
  {
    port: Port('TCP port to listen on; not also a port of binds.'),
    address: Type.Optional(Host('Address to listen on; default 0.0.0.0.')),
    listeners: Type.Array(TlsListenerConfig, { minItems: 1, maxItems: 64, description: 'Listeners on this port, chosen by the ClientHello\'s server name.' }),
  },
  { additionalProperties: false, description: 'A port of TLS listeners.' },
);
export type TlsBindConfig = Static<typeof TlsBindConfig>;
