// gRPC to a TLS backend on the e2e node, set up as a platform team would: the chart, one
// Gateway, a GRPCRoute to a Service port that a BackendTLSPolicy covers (its CA from a
// ConfigMap). The backend is the Gateway API conformance echo server in its gRPC mode
// (echo-basic, grpc-go) serving TLS with a certificate of a CA made here; a grpc-js client calls
// the proxy pod over HTTP/2 with prior knowledge.
// - The call is answered by echo-basic's TLS server: over HTTP/2 by ALPN (its assertions say
//   negotiated protocol h2) with the policy's hostname as SNI.
// - A second Service port on the same pods under a policy naming another hostname: the
//   certificate does not verify, the call is UNAVAILABLE with TG_UPSTREAM_CERTIFICATE.
import { beforeAll, describe, expect, it } from 'vitest';
import { ECHO_SERVICE, echoBasicCall, GRPC_STATUS } from '../../packages/proxy/test/support/grpc-echo-basic.js';
import { issueTestCertificate } from '../../packages/testkit/src/index.js';
import { installChart } from '../lib/chart.js';
import { nodeAvailability } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { kubectlOk, until } from './helm-install.lib.js';
import { echoBasicDeployment } from './manifests.js';

const availability = nodeAvailability();
const NS = 'grpc-tls';
const GATEWAY = 'grpc';
const PROXY = `${GATEWAY}-tollgate`;
const PROXY_PODS = `gateway.networking.k8s.io/gateway-name=${GATEWAY}`;
const HOST = `echo.${NS}.svc`;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const ca = issueTestCertificate({ commonName: 'grpc CA', ca: true });
const serving = issueTestCertificate({ commonName: HOST, names: [HOST], issuer: ca });

function policy(name: string, service: string, hostname: string): unknown {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'BackendTLSPolicy',
    metadata: { name, namespace: NS },
    spec: {
      targetRefs: [{ group: '', kind: 'Service', name: service, sectionName: 'grpcs' }],
      validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'grpc-ca' }], hostname },
    },
  };
}

function service(name: string): unknown {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: NS }, spec: { selector: { app: 'echo' }, ports: [{ name: 'grpcs', port: 9443, targetPort: 8443 }] } };
}

const OBJECTS: readonly unknown[] = [
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: GATEWAY, namespace: NS },
    spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
  },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'serving', namespace: NS }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(serving.cert), 'tls.key': b64(serving.key) } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'grpc-ca', namespace: NS }, data: { 'ca.crt': ca.cert } },
  echoBasicDeployment(NS, {
    ports: [8443],
    readyPort: 8443,
    env: [
      { name: 'GRPC_ECHO_SERVER', value: '1' },
      { name: 'HTTPS_PORT', value: '8443' },
      { name: 'TLS_SERVER_CERT', value: '/etc/serving/tls.crt' },
      { name: 'TLS_SERVER_PRIV_KEY', value: '/etc/serving/tls.key' },
    ],
    volumeMounts: [{ name: 'serving', mountPath: '/etc/serving', readOnly: true }],
    volumes: [{ name: 'serving', secret: { secretName: 'serving' } }],
  }),
  service('echo'),
  service('echo-wrong-name'),
  policy('echo-tls', 'echo', HOST),
  policy('echo-wrong-name-tls', 'echo-wrong-name', `other.${NS}.svc`),
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GRPCRoute',
    metadata: { name: 'echo', namespace: NS },
    spec: {
      parentRefs: [{ name: GATEWAY }],
      rules: [
        { matches: [{ method: { service: ECHO_SERVICE }, headers: [{ name: 'x-target', value: 'wrong-name' }] }], backendRefs: [{ name: 'echo-wrong-name', port: 9443 }] },
        { matches: [{ method: { service: ECHO_SERVICE } }], backendRefs: [{ name: 'echo', port: 9443 }] },
      ],
    },
  },
];

interface RouteStatus {
  status?: { parents?: { conditions?: { type: string; status: string; reason: string; message: string }[] }[] };
}

describe.skipIf(!availability.run)('a GRPCRoute to a TLS gRPC backend behind a BackendTLSPolicy on the e2e node (echo-basic in gRPC mode)', () => {
  const node = useNode();
  const k = (...args: string[]) => kubectlOk(node.current, args);
  let target = '';

  beforeAll(async () => {
    await installChart(node.current);
    await k('create', 'namespace', NS);
    await kubectlOk(node.current, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: OBJECTS }));
    await k('wait', '--for=condition=Programmed', `gateway/${GATEWAY}`, '-n', NS, '--timeout=180s');
    await k('rollout', 'status', '-n', NS, `deployment/${PROXY}`, '--timeout=180s');
    await k('rollout', 'status', '-n', NS, 'deployment/echo', '--timeout=120s');
    await until(`GRPCRoute ${NS}/echo ResolvedRefs`, async () => {
      const r = JSON.parse(await k('get', 'grpcroute', 'echo', '-n', NS, '-o', 'json')) as RouteStatus;
      const c = r.status?.parents?.[0]?.conditions?.find((x) => x.type === 'ResolvedRefs');
      if (c?.status === 'False') throw new Error(`echo: ${c.reason}: ${c.message}`);
      return c?.status === 'True' ? true : undefined;
    }, 60_000);
    const pod = (await k('get', 'pods', '-n', NS, '-l', PROXY_PODS, '-o', 'jsonpath={.items[0].status.podIP}')).trim();
    if (!pod) throw new Error('the proxy pod has no address');
    target = `${pod}:80`;
    // The proxy serves the route once it applied a snapshot with it: the first call that succeeds says so.
    await until('a call through the proxy pod succeeds', async () => ((await echoBasicCall(target)).code === GRPC_STATUS.OK ? true : undefined), 120_000, 500);
  }, 20 * 60_000);

  it("is answered by echo-basic's TLS server over HTTP/2 by ALPN, the policy's hostname as SNI", async () => {
    const r = await echoBasicCall(target, { 'x-client': 'node' });
    expect(r.code).toBe(GRPC_STATUS.OK);
    expect(r.assertions).toMatchObject({ fullyQualifiedMethod: `/${ECHO_SERVICE}/Echo`, context: { namespace: NS }, tlsAssertions: { negotiatedProtocol: 'h2', serverName: HOST } });
    expect(r.assertions!.headers).toContainEqual({ key: 'x-client', value: 'node' });
  });

  it('a certificate without the name the policy checks: UNAVAILABLE, TG_UPSTREAM_CERTIFICATE', async () => {
    const r = await echoBasicCall(target, { 'x-target': 'wrong-name' });
    expect(r.code).toBe(GRPC_STATUS.UNAVAILABLE);
    expect(r.headers['x-tollgate-error']).toBe('TG_UPSTREAM_CERTIFICATE');
  });
});
