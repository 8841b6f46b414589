// A grpc-js client of the Gateway API conformance echo server's gRPC service (echo-basic with
// GRPC_ECHO_SERVER set; grpc-go): its Echo method, and the assertions it answers with (the
// method, the headers it got, and over TLS what the handshake was: version, ALPN, SNI). The
// message types are those of echo-basic's grpcecho.proto (gateway-api conformance v1.6.1),
// written here as protobufjs reflection rather than loaded from the .proto.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

export const ECHO_SERVICE = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';
/** grpc-js's status codes, for callers that do not depend on grpc-js themselves. */
export const GRPC_STATUS = grpc.status;

const root = protobuf.Root.fromJSON({
  nested: {
    Header: { fields: { key: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } } },
    Context: { fields: { namespace: { type: 'string', id: 1 }, ingress: { type: 'string', id: 2 }, serviceName: { type: 'string', id: 3 }, pod: { type: 'string', id: 4 } } },
    TLSAssertions: {
      fields: { version: { type: 'string', id: 1 }, negotiatedProtocol: { type: 'string', id: 2 }, serverName: { type: 'string', id: 3 }, cipherSuite: { type: 'string', id: 4 }, peerCertificates: { rule: 'repeated', type: 'string', id: 5 } },
    },
    Assertions: {
      fields: { fullyQualifiedMethod: { type: 'string', id: 1 }, headers: { rule: 'repeated', type: 'Header', id: 2 }, authority: { type: 'string', id: 3 }, context: { type: 'Context', id: 4 }, tlsAssertions: { type: 'TLSAssertions', id: 5 } },
    },
    EchoResponse: { fields: { assertions: { type: 'Assertions', id: 1 } } },
  },
});
const EchoResponse = root.lookupType('EchoResponse');

export interface EchoAssertions {
  readonly fullyQualifiedMethod: string;
  readonly headers: { key: string; value: string }[];
  readonly authority: string;
  readonly context?: { namespace?: string; pod?: string };
  /** Present when the echo server was called over TLS. */
  readonly tlsAssertions?: { version?: string; negotiatedProtocol?: string; serverName?: string };
}

export interface EchoOutcome {
  readonly code: grpc.status;
  readonly details: string;
  /** The answer's headers (the gateway's x-tollgate-error on an error it made). */
  readonly headers: Record<string, string>;
  readonly assertions: EchoAssertions | null;
}

/** Calls Echo through `target` (`host:port`, plain HTTP/2) with `metadata`; resolves with the status whatever it is. */
export function echoBasicCall(target: string, metadata: Record<string, string> = {}, deadlineMs = 10_000): Promise<EchoOutcome> {
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  let headers: Record<string, string> = {};
  let assertions: EchoAssertions | null = null;
  return new Promise<EchoOutcome>((resolve) => {
    const call = client.makeUnaryRequest(
      `/${ECHO_SERVICE}/Echo`,
      () => Buffer.alloc(0),
      (b: Buffer) => EchoResponse.toObject(EchoResponse.decode(b)) as { assertions?: EchoAssertions },
      {},
      md,
      { deadline: Date.now() + deadlineMs },
      (_err, m) => {
        assertions = m?.assertions ?? null;
      },
    );
    call.on('metadata', (m: grpc.Metadata) => (headers = Object.fromEntries(Object.entries(m.getMap()).map(([k, v]) => [k, String(v)]))));
    call.on('status', (s: grpc.StatusObject) => {
      client.close();
      resolve({ code: s.code, details: s.details, headers, assertions });
    });
  });
}
