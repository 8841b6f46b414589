// The GatewayPolicy CRD on a real kube-apiserver: the examples are accepted, bad policies are
// rejected with a message naming the field, `kubectl explain` prints the schema's
// descriptions and `kubectl get gwpol` shows the Accepted/Attached columns.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LocalRateLimit } from '../packages/api/src/index.js';
import { run } from './lib/exec.js';
import { REPO_ROOT, e2eAvailability } from './lib/tools.js';
import { useCluster } from './lib/use-cluster.js';

const availability = e2eAvailability();

const NS = 'policies';

type Policy = Record<string, unknown>;

function policy(name: string, spec: Record<string, unknown>): Policy {
  return { apiVersion: 'tollgate.dev/v1alpha1', kind: 'GatewayPolicy', metadata: { name, namespace: NS }, spec };
}

const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' };
const local = (...entries: Record<string, unknown>[]) => ({ targetRefs: [route], traffic: { rateLimit: { local: entries } } });

interface BadCase {
  name: string;
  spec: Record<string, unknown>;
  /** Every pattern must appear in kubectl's error output. */
  expect: RegExp[];
}

const BAD: BadCase[] = [
  {
    name: 'tokens and requests together',
    spec: local({ tokens: 100, requests: 10, unit: 'Minutes' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]: Invalid value: exactly one of requests or tokens must be set/],
  },
  {
    name: 'neither tokens nor requests',
    spec: local({ unit: 'Minutes' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]: Invalid value: exactly one of requests or tokens must be set/],
  },
  {
    name: 'unit Weeks',
    spec: local({ tokens: 100, unit: 'Weeks' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.unit: Unsupported value: "Weeks": supported values: "Seconds", "Minutes", "Hours", "Days", "Months"/],
  },
  {
    name: 'unit Months on a local limit',
    spec: local({ tokens: 100, unit: 'Months' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]: Invalid value: .*Months is not available for a local limit: local counters live in each proxy's memory/],
  },
  {
    name: 'a Header key without a name',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Header' } }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.by: Invalid value: .*name is required with Claim and Header/],
  },
  {
    name: 'a Header key that is no header name',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Header', name: 'x user' } }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.by: Invalid value: .*a Header key names an HTTP header/],
  },
  {
    name: 'an Expression key without an expression',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Expression', name: 'x' } }),
    expect: [/expression is required with Expression/, /name is required with Claim and Header, and not allowed with the other types/],
  },
  {
    name: 'a descriptor with neither entries nor by',
    spec: {
      targetRefs: [route],
      traffic: { rateLimit: { global: { service: { backendRef: { name: 'rls', port: 8081 } }, domain: 'd', descriptors: [{ unit: 'Requests', limit: { requestsPerUnit: 0, unit: 'Days' } }] } } },
    },
    expect: [/spec\.traffic\.rateLimit\.global\.descriptors\[0\]: Invalid value: .*set entries, by, or both/, /descriptors\[0\]\.limit\.requestsPerUnit: Invalid value: 0/],
  },
  {
    name: 'an override key given twice',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'alice', requests: 2 }, { key: 'bob', requests: 3 }, { key: 'alice', requests: 3 }] }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.overrides\[2\]: Duplicate value: .*alice/],
  },
  {
    name: 'overrides without by',
    spec: local({ requests: 1, unit: 'Hours', overrides: [{ key: 'alice', requests: 2 }] }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]: Invalid value: .*overrides are only allowed with by/],
  },
  {
    name: 'a tokens override on a requests entry',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'alice', tokens: 2 }] }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]: Invalid value: .*every override sets the amount the entry sets/],
  },
  {
    name: 'an override key longer than a kept key value',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Consumer' }, overrides: [{ key: 'k'.repeat(129), requests: 2 }] }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.overrides\[0\]\.key: Too long/],
  },
  {
    name: 'more overrides than allowed',
    spec: local({ requests: 1, unit: 'Hours', by: { type: 'Consumer' }, overrides: Array.from({ length: 1001 }, (_, i) => ({ key: `c${i}`, requests: 2 })) }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.overrides: Too many: 1001: must have at most 1000 items/],
  },
  {
    name: 'descriptor overrides without a limit',
    spec: {
      targetRefs: [route],
      traffic: {
        rateLimit: {
          global: { service: { backendRef: { name: 'rls', port: 8081 } }, domain: 'd', descriptors: [{ unit: 'Requests', by: { type: 'Consumer' }, overrides: [{ key: 'alice', requestsPerUnit: 5 }] }] },
        },
      },
    },
    expect: [/spec\.traffic\.rateLimit\.global\.descriptors\[0\]: Invalid value: .*overrides need by .* and limit/],
  },
  {
    name: 'missing unit',
    spec: local({ tokens: 100 }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.unit: Required value/],
  },
  {
    name: 'zero requests',
    spec: local({ requests: 0, unit: 'Seconds' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.requests: Invalid value: 0: .*greater than or equal to 1/],
  },
  {
    name: 'negative tokens',
    spec: local({ tokens: -5, unit: 'Hours' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.tokens: Invalid value: -5: .*greater than or equal to 1/],
  },
  {
    name: 'negative burst',
    spec: local({ requests: 10, burst: -1, unit: 'Minutes' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]\.burst: Invalid value: -1: .*greater than or equal to 0/],
  },
  {
    name: 'burst with tokens',
    spec: local({ tokens: 100, burst: 5, unit: 'Minutes' }),
    expect: [/spec\.traffic\.rateLimit\.local\[0\]: Invalid value: burst is only allowed with requests/],
  },
  {
    name: 'wrong target kind',
    spec: { targetRefs: [{ ...route, kind: 'Service' }] },
    expect: [/spec\.targetRefs\[0\]\.kind: Unsupported value: "Service": supported values: "Gateway", "HTTPRoute"/],
  },
  {
    name: 'wrong target group',
    spec: { targetRefs: [{ ...route, group: 'networking.k8s.io' }] },
    expect: [/spec\.targetRefs\[0\]\.group: Unsupported value: "networking\.k8s\.io": supported values: "gateway\.networking\.k8s\.io"/],
  },
  {
    name: 'no targetRefs',
    spec: { traffic: { rateLimit: { local: [{ tokens: 100, unit: 'Minutes' }] } } },
    expect: [/spec\.targetRefs: Required value/],
  },
  {
    name: 'unknown field',
    spec: local({ tokens: 100, unit: 'Minutes', window: '1m' }),
    expect: [/unknown field "spec\.traffic\.rateLimit\.local\[0\]\.window"/],
  },
  {
    name: 'too many local entries',
    spec: local(...Array.from({ length: 17 }, () => ({ requests: 1, unit: 'Seconds' }))),
    expect: [/spec\.traffic\.rateLimit\.local: Too many: 17: must have at most 16 items/],
  },
  {
    name: 'too many targetRefs',
    spec: { targetRefs: Array.from({ length: 17 }, (_, i) => ({ ...route, name: `r${i}` })) },
    expect: [/spec\.targetRefs: Too many: 17: must have at most 16 items/],
  },
  {
    name: 'empty local list',
    spec: local(),
    expect: [/spec\.traffic\.rateLimit\.local: Invalid value: 0: .*should have at least 1 items/],
  },
  {
    name: 'global service with both host and backendRef',
    spec: {
      targetRefs: [route],
      traffic: {
        rateLimit: {
          global: {
            service: { host: 'rls:8081', backendRef: { name: 'rls', port: 8081 } },
            domain: 'd',
            descriptors: [{ unit: 'Requests', entries: [{ name: 'k', expression: 'llm.model' }] }],
          },
        },
      },
    },
    expect: [/spec\.traffic\.rateLimit\.global\.service: Invalid value: exactly one of host or backendRef must be set/],
  },
  {
    name: 'global service port out of range',
    spec: globalWith({ host: 'rls:99999' }),
    expect: [/spec\.traffic\.rateLimit\.global\.service\.host: Invalid value: "rls:99999": spec\.traffic\.rateLimit\.global\.service\.host in body should match/],
  },
  {
    name: 'global service host that is no address',
    spec: globalWith({ host: '300.1.1.1:8081' }, '100ms'),
    expect: [/spec\.traffic\.rateLimit\.global\.service\.host: Invalid value: "300\.1\.1\.1:8081"/],
  },
  {
    name: 'global timeout past 596h',
    spec: globalWith({ host: 'rls:8081' }, '597h'),
    expect: [/spec\.traffic\.rateLimit\.global\.timeout: Invalid value: "597h": must be at most 596h \(the longest timer the proxy can set\)/],
  },
  {
    name: 'a sectionName that is no listener or rule name',
    spec: { targetRefs: [{ ...route, sectionName: 'Public Listener' }], traffic: { rateLimit: { local: [{ requests: 1, unit: 'Minutes' }] } } },
    expect: [/spec\.targetRefs\[0\]\.sectionName: Invalid value: "Public Listener"/],
  },
  {
    name: 'global timeout of 0s',
    spec: globalWith({ host: 'rls:8081' }, '0s'),
    expect: [/spec\.traffic\.rateLimit\.global\.timeout: Invalid value: "0s": must be more than 0s/],
  },
  ...authCases(),
  ...transformationCases(),
  ...trafficKindCases(),
];

/** The transformation: the schema's bounds and rules, each refusal naming the field. */
function transformationCases(): BadCase[] {
  const transformation = (t: Record<string, unknown>) => ({ targetRefs: [route], traffic: { transformation: t } });
  const headers = (h: Record<string, unknown>) => transformation({ request: { headers: h } });
  const body = (b: Record<string, unknown>) => transformation({ request: { body: b } });
  return [
    { name: 'a transformation header name with a space', spec: headers({ set: [{ name: 'x team', value: '"a"' }] }), expect: [/spec\.traffic\.transformation\.request\.headers\.set\[0\]\.name: Invalid value: "x team"/] },
    { name: 'a transformation body path with an index', spec: body({ set: [{ path: 'messages[0].content', value: '"a"' }] }), expect: [/spec\.traffic\.transformation\.request\.body\.set\[0\]\.path: Invalid value: "messages\[0\]\.content"/] },
    { name: 'a transformation body path nine levels deep', spec: body({ remove: ['a.b.c.d.e.f.g.h.i'] }), expect: [/spec\.traffic\.transformation\.request\.body\.remove\[0\]: Invalid value: "a\.b\.c\.d\.e\.f\.g\.h\.i"/] },
    {
      name: 'a transformation header set and removed',
      spec: headers({ set: [{ name: 'x-team', value: '"a"' }], remove: ['x-team'] }),
      expect: [/spec\.traffic\.transformation\.request\.headers: Invalid value: .*a header is edited once: set, add and remove name different headers/],
    },
    {
      name: 'a transformation body field inside another edited one',
      spec: body({ set: [{ path: 'stream_options', value: '{}' }], remove: ['stream_options.include_usage'] }),
      expect: [/spec\.traffic\.transformation\.request\.body: Invalid value: .*a body field is edited once, and not inside another edited field/],
    },
    { name: 'a transformation header set twice', spec: headers({ set: [{ name: 'x-a', value: '"1"' }, { name: 'x-a', value: '"2"' }] }), expect: [/spec\.traffic\.transformation\.request\.headers\.set\[1\]: Duplicate value: .*"x-a"/] },
    {
      name: 'more than 16 transformation edits',
      spec: headers({ remove: Array.from({ length: 17 }, (_, i) => `x-${i}`) }),
      expect: [/spec\.traffic\.transformation\.request\.headers\.remove: Too many: 17: must have at most 16 items/],
    },
    {
      name: 'a transformation expression over 1024 characters',
      spec: headers({ set: [{ name: 'x-a', value: `"${'a'.repeat(1100)}"` }] }),
      expect: [/spec\.traffic\.transformation\.request\.headers\.set\[0\]\.value: Too long: may not be (longer|more) than 1024/],
    },
  ];
}

/** cors, csrf, directResponse and extProc: the CRD's own rules (x-kubernetes-validations), each naming the field. */
function trafficKindCases(): BadCase[] {
  const traffic = (t: Record<string, unknown>) => ({ targetRefs: [route], traffic: t });
  return [
    {
      name: 'cors allowing every origin with credentials',
      spec: traffic({ cors: { allowOrigins: ['*'], allowCredentials: true } }),
      expect: [/spec\.traffic\.cors: Invalid value: .*allowOrigins "\*" with allowCredentials true lets every site make credentialed calls/],
    },
    {
      name: 'cors with "*" beside another origin',
      spec: traffic({ cors: { allowOrigins: ['*', 'https://a.example'] } }),
      expect: [/spec\.traffic\.cors\.allowOrigins: Invalid value: .*allowOrigins cannot contain '\*' alongside other entries/],
    },
    {
      name: 'cors origin with a path',
      spec: traffic({ cors: { allowOrigins: ['https://a.example/app'] } }),
      expect: [/spec\.traffic\.cors\.allowOrigins\[0\]: Invalid value: "https:\/\/a\.example\/app"/],
    },
    {
      name: 'cors without origins',
      spec: traffic({ cors: { allowMethods: ['GET'] } }),
      expect: [/spec\.traffic\.cors\.allowOrigins: Required value/],
    },
    {
      name: 'cors maxAge over a day',
      spec: traffic({ cors: { allowOrigins: ['https://a.example'], maxAge: 86401 } }),
      expect: [/spec\.traffic\.cors\.maxAge: Invalid value: 86401: .*less than or equal to 86400/],
    },
    {
      name: 'cors with a repeated origin',
      spec: traffic({ cors: { allowOrigins: ['https://a.example', 'https://a.example'] } }),
      expect: [/spec\.traffic\.cors\.allowOrigins\[1\]: Duplicate value: "https:\/\/a\.example"/],
    },
    {
      name: 'csrf allowing every origin',
      spec: traffic({ csrf: { additionalOrigins: ['*'] } }),
      expect: [/spec\.traffic\.csrf\.additionalOrigins: Invalid value: .*additionalOrigins cannot be '\*'/],
    },
    {
      name: 'directResponse with a body on 204',
      spec: traffic({ directResponse: { status: 204, body: { text: 'x' } } }),
      expect: [/spec\.traffic\.directResponse: Invalid value: .*a 204, 205 or 304 answer has no body/],
    },
    {
      name: 'directResponse with a text and a json body',
      spec: traffic({ directResponse: { status: 200, body: { text: 'x', json: { a: 1 } } } }),
      expect: [/spec\.traffic\.directResponse\.body: Invalid value: .*set exactly one of text or json/],
    },
    {
      name: 'directResponse with a status below 200',
      spec: traffic({ directResponse: { status: 101 } }),
      expect: [/spec\.traffic\.directResponse\.status: Invalid value: 101: .*greater than or equal to 200/],
    },
    {
      name: 'directResponse with a header twice',
      spec: traffic({ directResponse: { status: 200, headers: [{ name: 'x-a', value: '1' }, { name: 'x-a', value: '2' }] } }),
      expect: [/spec\.traffic\.directResponse\.headers\[1\]: Duplicate value/],
    },
    {
      name: 'directResponse with a JSON body that is no object',
      spec: traffic({ directResponse: { status: 200, body: { json: 'text' } } }),
      expect: [/spec\.traffic\.directResponse\.body\.json: Invalid value: "string": .*must be of type object/],
    },
    {
      name: 'extProc with an unknown body mode',
      spec: traffic({ extProc: { service: { backendRef: { name: 'p', port: 9002 } }, processingMode: { requestBodyMode: 'BUFFERD' } } }),
      expect: [/spec\.traffic\.extProc\.processingMode\.requestBodyMode: Unsupported value: "BUFFERD"/],
    },
    {
      name: 'extProc buffering more than 8 MiB',
      spec: traffic({ extProc: { service: { backendRef: { name: 'p', port: 9002 } }, maxBufferedBytes: 9_000_000 } }),
      expect: [/spec\.traffic\.extProc\.maxBufferedBytes: Invalid value: 9000000: .*less than or equal to 8388608/],
    },
    {
      name: 'extProc naming no service',
      spec: traffic({ extProc: { service: {} } }),
      expect: [/spec\.traffic\.extProc\.service: Invalid value: .*exactly one of host or backendRef must be set/],
    },
  ];
}

/** The authentication kinds: rules the CRD itself enforces, each refusal naming the field. */
function authCases(): BadCase[] {
  const traffic = (t: Record<string, unknown>) => ({ targetRefs: [route], traffic: t });
  const jwks = { inline: '{"keys":[]}' };
  const oidc = (over: Record<string, unknown>) => traffic({ oidc: { issuer: 'https://idp.example', provider: { backendRef: { name: 'idp', port: 443 } }, clientId: 'ui', sessionKey: { ref: { name: 'oidc' } }, ...over } });
  return [
    {
      name: 'oidc without a sessionKey',
      spec: traffic({ oidc: { issuer: 'https://idp.example', provider: { backendRef: { name: 'idp', port: 443 } }, clientId: 'ui' } }),
      expect: [/spec\.traffic\.oidc\.sessionKey: Required value/],
    },
    {
      name: 'oidc issuer that is not a URL',
      spec: oidc({ issuer: 'idp.example' }),
      expect: [/spec\.traffic\.oidc\.issuer: Invalid value: "idp\.example"/],
    },
    {
      name: 'oidc provider with both host and backendRef',
      spec: oidc({ provider: { host: 'idp:443', backendRef: { name: 'idp', port: 443 } } }),
      expect: [/spec\.traffic\.oidc\.provider: Invalid value: .*exactly one of host or backendRef must be set/],
    },
    {
      name: 'oidc session key from a ref and a file',
      spec: oidc({ sessionKey: { ref: { name: 'oidc' }, file: 'key' } }),
      expect: [/spec\.traffic\.oidc\.sessionKey: Invalid value: .*exactly one of ref or file must be set/],
    },
    {
      name: 'oidc session over 720h',
      spec: oidc({ cookie: { maxAge: '800h' } }),
      expect: [/spec\.traffic\.oidc\.cookie\.maxAge: Invalid value: .*must be from 1m to 720h/],
    },
    {
      name: 'oidc with 9 cookie chunks',
      spec: oidc({ cookie: { maxChunks: 9 } }),
      expect: [/spec\.traffic\.oidc\.cookie\.maxChunks: Invalid value: 9: .*less than or equal to 8/],
    },
    {
      name: 'apiKey naming no keys',
      spec: traffic({ apiKey: { keyFrom: [{ type: 'Bearer' }] } }),
      expect: [/spec\.traffic\.apiKey: Invalid value: .*name the keys: secretRefs or secretSelector \(cluster\), or file \(standalone\)/],
    },
    {
      name: 'apiKey read from a header without its name',
      spec: traffic({ apiKey: { secretRefs: [{ name: 'k' }], keyFrom: [{ type: 'Header' }] } }),
      expect: [/spec\.traffic\.apiKey\.keyFrom\[0\]: Invalid value: .*name is required with Header, Query and Cookie, and not allowed with Bearer/],
    },
    {
      name: 'apiKey read from an unknown place',
      spec: traffic({ apiKey: { secretRefs: [{ name: 'k' }], keyFrom: [{ type: 'Body', name: 'key' }] } }),
      expect: [/spec\.traffic\.apiKey\.keyFrom\[0\]\.type: Unsupported value: "Body"/],
    },
    {
      name: 'basicAuth with a Secret and a file',
      spec: traffic({ basicAuth: { htpasswd: { secretRef: { name: 'users' }, file: 'users.htpasswd' } } }),
      expect: [/spec\.traffic\.basicAuth\.htpasswd: Invalid value: .*exactly one of secretRef or file must be set/],
    },
    {
      name: 'jwt keys from two places',
      spec: traffic({ jwt: { providers: [{ name: 'idp', jwks: { ...jwks, ref: { kind: 'ConfigMap', name: 'jwks' } } }] } }),
      expect: [/spec\.traffic\.jwt\.providers\[0\]\.jwks: Invalid value: .*exactly one of inline, ref, file or remote must be set/],
    },
    {
      name: 'jwt provider name with capitals',
      spec: traffic({ jwt: { providers: [{ name: 'My IdP', jwks }] } }),
      expect: [/spec\.traffic\.jwt\.providers\[0\]\.name: Invalid value: "My IdP"/],
    },
    {
      name: 'too many jwt providers',
      spec: traffic({ jwt: { providers: Array.from({ length: 9 }, (_, i) => ({ name: `p${i}`, jwks })) } }),
      expect: [/spec\.traffic\.jwt\.providers: Too many: 9: must have at most 8 items/],
    },
    {
      name: 'jwt token prefix on a cookie',
      spec: traffic({ jwt: { providers: [{ name: 'idp', jwks, tokenFrom: [{ type: 'Cookie', name: 's', prefix: 'JWT ' }] }] } }),
      expect: [/spec\.traffic\.jwt\.providers\[0\]\.tokenFrom\[0\]: Invalid value: .*prefix is allowed with Header only/],
    },
    {
      name: 'jwt remote key set cached for 5s',
      spec: traffic({ jwt: { providers: [{ name: 'idp', jwks: { remote: { backendRef: { name: 'idp', port: 80 }, path: '/jwks', cacheDuration: '5s' } } }] } }),
      expect: [/spec\.traffic\.jwt\.providers\[0\]\.jwks\.remote\.cacheDuration: Invalid value: "5s": must be from 10s to 24h/],
    },
    {
      name: 'jwt token length over the bound',
      spec: traffic({ jwt: { maxTokenLength: 100_000, providers: [{ name: 'idp', jwks }] } }),
      expect: [/spec\.traffic\.jwt\.maxTokenLength: Invalid value: 100000: .*should be less than or equal to 16384/],
    },
    {
      name: 'authorization rule with an unknown action',
      spec: traffic({ authorization: { rules: [{ action: 'Permit', expression: 'true' }] } }),
      expect: [/spec\.traffic\.authorization\.rules\[0\]\.action: Unsupported value: "Permit": supported values: "Allow", "Deny"/],
    },
    {
      name: 'too many authorization rules',
      spec: traffic({ authorization: { rules: Array.from({ length: 33 }, () => ({ action: 'Allow', expression: 'true' })) } }),
      expect: [/spec\.traffic\.authorization\.rules: Too many: 33: must have at most 32 items/],
    },
    {
      name: 'extAuthz over an unknown protocol',
      spec: traffic({ extAuthz: { service: { backendRef: { name: 'authz', port: 9191 } }, protocol: 'SOAP' } }),
      expect: [/spec\.traffic\.extAuthz\.protocol: Unsupported value: "SOAP": supported values: "GRPC", "HTTP"/],
    },
    {
      name: 'extAuthz sending more body than allowed',
      spec: traffic({ extAuthz: { service: { backendRef: { name: 'authz', port: 9191 } }, withBody: { maxBytes: 2_000_000 } } }),
      expect: [/spec\.traffic\.extAuthz\.withBody\.maxBytes: Invalid value: 2000000: .*less than or equal to 1048576/],
    },
  ];
}

function globalWith(service: Record<string, unknown>, timeout?: string): Record<string, unknown> {
  const global = { service, domain: 'd', descriptors: [{ unit: 'Requests', entries: [{ name: 'k', expression: 'llm.model' }] }], ...(timeout ? { timeout } : {}) };
  return { targetRefs: [route], traffic: { rateLimit: { global } } };
}

const examples = readdirSync(join(REPO_ROOT, 'examples')).filter((f) => /^gatewaypolicy.*\.yaml$/.test(f));

describe.skipIf(!availability.run)('GatewayPolicy CRD on kube-apiserver', () => {
  const cluster = useCluster();
  const kubectl = async (args: string[], input?: string) => {
    const r = await cluster.current.kubectl(args, input === undefined ? {} : { input });
    return r;
  };
  const kubectlOk = (args: string[], input?: string) =>
    run(cluster.current.tools.kubectl, args, { env: cluster.current.env, ...(input === undefined ? {} : { input }) });

  beforeAll(async () => {
    // The harness applied crds/ (CRD_FILES[0]); the chart's copy is the same file (packages/api/test/crd.test.ts).
    await kubectlOk(['create', 'namespace', NS]);
    // examples/gatewaypolicy-failover.yaml belongs with examples/failover-kubernetes.yaml, in namespace team.
    await kubectlOk(['create', 'namespace', 'team']);
    // examples/gatewaypolicy-ext-proc.yaml is a Gateway-level policy beside its Gateway, in infra.
    await kubectlOk(['create', 'namespace', 'infra']);
    // examples/gatewaypolicy-grpcroute.yaml belongs with examples/grpcroute-kubernetes.yaml, in namespace grpc.
    await kubectlOk(['create', 'namespace', 'grpc']);
  });

  it('applies examples/gatewaypolicy.yaml (a local tokens limit on an HTTPRoute)', async () => {
    const out = await kubectlOk(['apply', '-f', join(REPO_ROOT, 'examples/gatewaypolicy.yaml')]);
    expect(out).toContain('gatewaypolicy.tollgate.dev/chat-token-budget created');
    const spec = JSON.parse(await kubectlOk(['get', 'gwpol', 'chat-token-budget', '-n', 'default', '-o', 'jsonpath={.spec}'])) as unknown;
    expect(spec).toEqual({
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'chat' }],
      traffic: { rateLimit: { local: [{ tokens: 5000, unit: 'Minutes' }] } },
    });
  });

  it.each(examples)('accepts examples/%s', async (file) => {
    const r = await kubectl(['apply', '--dry-run=server', '-f', join(REPO_ROOT, 'examples', file)]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it.each(BAD)('rejects a policy with $name, naming the field', async ({ name, spec, expect: patterns }) => {
    const obj = policy(name.toLowerCase().replace(/[^a-z0-9]+/g, '-'), spec);
    const r = await kubectl(['apply', '-f', '-'], JSON.stringify(obj));
    expect(r.code, `accepted:\n${r.stdout}`).not.toBe(0);
    for (const p of patterns) expect(r.stderr).toMatch(p);
  });

  it('kubectl explain prints the descriptions of the local limit fields', async () => {
    const out = await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.rateLimit.local']);
    expect(out).toContain('GROUP:      tollgate.dev');
    expect(out).toContain('KIND:       GatewayPolicy');
    expect(out).toContain('VERSION:    v1alpha1');
    expect(out).toMatch(/FIELD: local <\[\]Object>/);
    expect(out).toContain('Local limits, counted per proxy replica.');
    for (const [field, schema] of Object.entries(LocalRateLimit.properties)) {
      expect(out).toContain(field);
      // explain wraps long descriptions; compare without line breaks.
      expect(out.replace(/\s+/g, ' ')).toContain(schema.description!);
    }
    expect(out).toMatch(/unit\s+<string> -required-/);
    expect(out).toMatch(/enum: Seconds, Minutes, Hours/);
  });

  it('kubectl explain prints the descriptions of the authentication kinds', async () => {
    const traffic = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic'])).replace(/\s+/g, ' ');
    for (const kind of ['apiKey', 'basicAuth', 'jwt', 'authorization', 'extAuthz']) expect(traffic).toMatch(new RegExp(`${kind} <Object>`));
    const provider = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.jwt.providers'])).replace(/\s+/g, ' ');
    expect(provider).toContain('An issuer of tokens and how to verify them.');
    expect(provider).toMatch(/clockSkew <string>/);
    const apiKey = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.apiKey'])).replace(/\s+/g, ' ');
    expect(apiKey).toContain('The key is removed before the request is forwarded.');
  });

  it('kubectl explain prints the descriptions of the transformation', async () => {
    const traffic = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic'])).replace(/\s+/g, ' ');
    expect(traffic).toMatch(/transformation <Object>/);
    const body = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.transformation.request.body'])).replace(/\s+/g, ' ');
    expect(body).toContain('A request that has a body that is not a JSON object is refused (400)');
    expect(body).toMatch(/set <\[\]Object>/);
    const edit = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.transformation.request.body.set'])).replace(/\s+/g, ' ');
    expect(edit).toContain('e.g. stream_options.include_usage');
    expect(edit).toMatch(/when <string>/);
  });

  it('kubectl explain prints the descriptions of cors, csrf and directResponse', async () => {
    const traffic = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic'])).replace(/\s+/g, ' ');
    for (const kind of ['cors', 'csrf', 'directResponse']) expect(traffic).toMatch(new RegExp(`${kind} <Object>`));
    const cors = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.cors'])).replace(/\s+/g, ' ');
    expect(cors).toContain('preflights (OPTIONS with Access-Control-Request-Method) are answered by the gateway');
    expect(cors).toMatch(/allowOrigins <\[\]string> -required-/);
    const csrf = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.csrf.additionalOrigins'])).replace(/\s+/g, ' ');
    expect(csrf).toContain('Origins allowed besides the one the request was sent to');
    const direct = (await kubectlOk(['explain', 'gatewaypolicy.spec.traffic.directResponse.body'])).replace(/\s+/g, ' ');
    expect(direct).toContain('The body: text or json, exactly one.');
    expect(direct).toMatch(/json <Object>/);
  });

  it('keeps a directResponse JSON body whole but for its null values, which the API server drops (the field says so)', async () => {
    const body = { error: { message: 'gone', nested: { list: [1, 'two', { three: true }], nothing: null } } };
    const obj = policy('direct-json', { targetRefs: [route], traffic: { directResponse: { status: 410, body: { json: body } } } });
    await kubectlOk(['apply', '-f', '-'], JSON.stringify(obj));
    const stored = JSON.parse(await kubectlOk(['get', 'gwpol', 'direct-json', '-n', NS, '-o', 'jsonpath={.spec.traffic.directResponse.body.json}'])) as unknown;
    expect(stored).toEqual({ error: { message: 'gone', nested: { list: [1, 'two', { three: true }] } } });
  });

  it('kubectl explain works for the top level and the status', async () => {
    const top = await kubectlOk(['explain', 'gwpol']);
    expect(top.replace(/\s+/g, ' ')).toContain('GatewayPolicy attaches traffic policies');
    const status = await kubectlOk(['explain', 'gatewaypolicy.status.ancestors.conditions']);
    expect(status).toMatch(/lastTransitionTime\s+<string> -required-/);
    expect(status).toMatch(/observedGeneration\s+<integer>/);
  });

  it('kubectl get gwpol shows Accepted, Attached and Age', async () => {
    await kubectlOk(['apply', '-f', '-'], JSON.stringify(policy('columns', local({ requests: 10, burst: 5, unit: 'Minutes' }))));
    const before = await kubectlOk(['get', 'gwpol', 'columns', '-n', NS]);
    expect(before.split('\n')[0]).toMatch(/^NAME\s+ACCEPTED\s+ATTACHED\s+AGE$/);

    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const condition = (type: string) => ({ type, status: 'True', reason: type, message: `policy ${type.toLowerCase()}`, lastTransitionTime: now, observedGeneration: 1 });
    const status = {
      status: {
        ancestors: [
          {
            ancestorRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: NS, name: 'llm-gateway' },
            controllerName: 'tollgate.dev/gateway-controller',
            conditions: [condition('Accepted'), condition('Attached')],
          },
        ],
      },
    };
    await kubectlOk(['patch', 'gwpol', 'columns', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
    const lines = (await kubectlOk(['get', 'gwpol', '-n', NS])).trim().split('\n');
    expect(lines[1]).toMatch(/^columns\s+True\s+True\s+\d+s$/);

    // The status subresource is validated too.
    const bad = structuredClone(status);
    bad.status.ancestors[0]!.conditions[0]!.status = 'Yes';
    const r = await kubectl(['patch', 'gwpol', 'columns', '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify(bad)]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/status\.ancestors\[0\]\.conditions\[0\]\.status: Unsupported value: "Yes"/);
  });
});
