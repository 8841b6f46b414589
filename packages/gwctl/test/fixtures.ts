// A trace as the proxy emits it for `POST api.example.com/v1/chat/completions` (route
// main/chat, two policies, a 200 from the backend), and one for a refused connection.
import { EFFECTIVE_POLICY_KEYS, type TraceEvent } from '@tollgate/api';

const env = { podName: 'public-7d9f', namespace: 'edge', gateway: 'public' };
const request = (headers: Record<string, string>) => ({
  method: 'POST',
  uri: 'http://api.example.com/v1/chat/completions',
  path: '/v1/chat/completions',
  pathAndQuery: '/v1/chat/completions',
  host: 'api.example.com',
  scheme: 'http',
  version: '1.1',
  headers: { host: 'api.example.com', 'content-type': 'application/json', ...headers },
  startTime: '2026-11-22T00:31:30.631Z',
});
const source = { address: '127.0.0.1', rawAddress: '127.0.0.1', port: 51000, rawPort: 51000 };
const policy = Object.fromEntries(EFFECTIVE_POLICY_KEYS.map((k) => [k, null])) as Record<(typeof EFFECTIVE_POLICY_KEYS)[number], null | { source: 'gateway' | 'route'; config: unknown }[]>;

export function okTrace(): TraceEvent[] {
  return [
    { eventStart: null, eventEnd: 12, severity: 'info', message: { type: 'requestStarted' } },
    { eventStart: null, eventEnd: 40, severity: 'info', message: { type: 'requestSnapshot', stage: 'initial request', requestState: { request: request({}), source, env } } },
    { eventStart: null, eventEnd: 55, severity: 'info', message: { type: 'requestSnapshot', stage: 'gateway policies', requestState: { request: request({}), source, env } } },
    { eventStart: null, eventEnd: 80, severity: 'info', message: { type: 'routeSelection', selectedRoute: 'main/chat', evaluatedRoutes: ['main/embeddings', 'main/chat'] } },
    {
      eventStart: null,
      eventEnd: 90,
      severity: 'info',
      message: {
        type: 'policySelection',
        effectivePolicy: { ...policy, localRateLimit: [{ source: 'route', config: [{ kind: 'tokens', tokens: 5000, unit: 'Minutes' }] }], requestHeaderModifier: [{ source: 'route', config: {} }] },
      },
    },
    { eventStart: null, eventEnd: 120, severity: 'info', message: { type: 'requestSnapshot', stage: 'route policies', requestState: { request: request({ 'x-team': 'blue' }), source, env } } },
    {
      eventStart: null,
      eventEnd: 130,
      severity: 'info',
      message: { type: 'requestSnapshot', stage: 'final request', requestState: { request: request({ 'x-team': 'blue' }), source, env, backend: { name: '127.0.0.1:9000', type: 'service', protocol: 'http' } } },
    },
    { eventStart: null, eventEnd: 140, severity: 'info', message: { type: 'backendCallStart', target: '127.0.0.1:9000' } },
    { eventStart: 140, eventEnd: 8540, severity: 'info', message: { type: 'backendCallResult', status: 200, error: null } },
    { eventStart: null, eventEnd: 8600, severity: 'info', message: { type: 'responseSnapshot', stage: 'backend response ready', requestState: { response: { code: 200, headers: { 'content-type': 'application/json' } }, env } } },
    {
      eventStart: null,
      eventEnd: 8650,
      severity: 'info',
      message: { type: 'responseSnapshot', stage: 'final response', requestState: { response: { code: 200, headers: { 'content-type': 'application/json', 'x-ratelimit-remaining': '4983' } }, env } },
    },
    { eventStart: null, eventEnd: 9100, severity: 'info', message: { type: 'requestFinished' } },
  ];
}

export function refusedTrace(): TraceEvent[] {
  const ok = okTrace();
  return [
    ...ok.slice(0, 8),
    { eventStart: 140, eventEnd: 600, severity: 'error', message: { type: 'backendCallResult', status: 503, error: { kind: 'TG_UPSTREAM_REFUSED', message: 'connect ECONNREFUSED 127.0.0.1:9000' } } },
    { eventStart: null, eventEnd: 650, severity: 'error', message: { type: 'responseSnapshot', stage: 'final response', requestState: { response: { code: 503, headers: {} }, env } } },
    { eventStart: null, eventEnd: 700, severity: 'info', message: { type: 'requestFinished' } },
  ];
}

/** A request an API key let through and the authorization rules refused (403). */
export function authDeniedTrace(): TraceEvent[] {
  const ok = okTrace();
  const auth = {
    consumer: { name: 'alice', group: 'team-a', via: 'apiKey' as const, credentialId: '3f2a9c1e' },
    checks: [
      { kind: 'apiKey' as const, result: 'allow' as const, reason: 'allowed' as const, note: null },
      { kind: 'authorization' as const, result: 'deny' as const, reason: 'denied' as const, note: 'denied by rule no-large-models' },
    ],
  };
  return [
    ...ok.slice(0, 4),
    { eventStart: null, eventEnd: 90, severity: 'info', message: { type: 'policySelection', effectivePolicy: { ...policy, apiKey: [{ source: 'gateway', config: { consumers: 2 } }], authorization: [{ source: 'route', config: { rules: [] } }] } } },
    { eventStart: null, eventEnd: 120, severity: 'info', message: { type: 'requestSnapshot', stage: 'route policies', requestState: { request: request({}), source, auth, env } } },
    { eventStart: null, eventEnd: 150, severity: 'warn', message: { type: 'responseSnapshot', stage: 'final response', requestState: { response: { code: 403, headers: { 'x-tollgate-error': 'TG_FORBIDDEN' } }, env } } },
    { eventStart: null, eventEnd: 160, severity: 'info', message: { type: 'requestFinished' } },
  ];
}
