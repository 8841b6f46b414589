// One redaction list for logs, traces and config dumps. Before it was merged, the logger and
// the trace/config-dump code each had their own list: x-goog-api-key and x-auth-token were
// redacted in traces and dumps but not in logs. Each of those, a header of the former logger
// list and a session-token header, is checked in all three places.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTrace, send, simpleConfig, startGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

// header -> a value that must never appear
const SECRETS = {
  'x-goog-api-key': 'from-trace-list-1', // only in the trace/config-dump list before
  'x-auth-token': 'from-trace-list-2', // only in the trace/config-dump list before
  'proxy-authorization': 'from-both-lists', // in both lists before
  'x-amz-security-token': 'session-token', // in neither before
};

let up: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  up = await startUpstream();
  gw = await startGateway(
    (port) => simpleConfig(port, [
      {
        name: 'api',
        filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: Object.entries(SECRETS).map(([name, value]) => ({ name, value: `filter-${value}` })) } }],
        backends: [{ host: up.host }],
      },
    ]),
  );
});

afterAll(async () => {
  await gw?.close();
  await up?.close();
});

function expectNoSecret(text: string): void {
  for (const value of Object.values(SECRETS)) expect(text).not.toContain(value);
}

describe('the merged redaction list', () => {
  it('redacts each header in log lines', async () => {
    gw.gateway.logs.get('upstream').warn({ headers: SECRETS, req: { headers: SECRETS } }, 'headers logged');
    gw.gateway.logs.flush();
    const line = await gw.logs.waitFor((l) => l.msg === 'headers logged');
    expectNoSecret(JSON.stringify(line));
    for (const name of Object.keys(SECRETS)) {
      expect((line.headers as Record<string, string>)[name]).toBe('[redacted]');
      expect((line.req as { headers: Record<string, string> }).headers[name]).toBe('[redacted]');
    }
  });

  it('redacts each header in trace snapshots, both as the client sent it and as a filter set it', async () => {
    const s = await openTrace(gw.adminUrl);
    await s.armed;
    const r = await send(`${gw.url}/x`, { headers: SECRETS });
    expect(r.status).toBe(200);
    const events = await s.events;
    const text = JSON.stringify(events);
    expectNoSecret(text);
    const initial = events.find((e) => e.message.type === 'requestSnapshot' && e.message.stage === 'initial request')!;
    const final = events.find((e) => e.message.type === 'requestSnapshot' && e.message.stage === 'final request')!;
    for (const e of [initial, final]) {
      const headers = (e.message as { requestState: { request: { headers: Record<string, string> } } }).requestState.request.headers;
      for (const name of Object.keys(SECRETS)) expect(headers[name]).toBe('[redacted]');
    }
  });

  it('redacts each header set by a filter in the config dump', async () => {
    const r = await send(`${gw.adminUrl}/config_dump`);
    expectNoSecret(r.body);
    const dump = JSON.parse(r.body) as { routes: { filters: { set: { name: string; value: string }[] }[] }[] };
    expect(dump.routes[0]!.filters[0]!.set.map((h) => h.value)).toEqual(Object.keys(SECRETS).map(() => '[redacted]'));
  });
});
