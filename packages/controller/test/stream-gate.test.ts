// The stream gate alone: which hellos are admitted with TLS and without, what is counted and
// logged, and how long an admitted stream lives (re-authentication, age). The decisions are the
// real TokenReviewAuthenticator's; a table stands in for the API server's TokenReview.
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { TokenReviewAuthenticator } from '../src/snapshots/stream-auth.js';
import { StreamGate, type StreamSecurity } from '../src/snapshots/stream-gate.js';
import type { EndReason } from '../src/snapshots/stream-lifetime.js';
import { StreamMetrics } from '../src/snapshots/stream-metrics.js';
import { ThrottledLog } from '../src/snapshots/throttled-log.js';
import type { ReviewResult } from '../src/snapshots/token-review.js';
import { expected, GW, GW_SA, OK, TableReviewer, token } from './stream-tokens.js';

const GOOD = token({ sub: GW_SA, aud: ['tollgate'] }, 'c2VjcmV0LXNpZ25hdHVyZQ');
const hello = { gateway: GW, pod: 'gw-0', podNamespace: 'apps', version: '' };
const withToken = (t?: string) => {
  const md = new grpc.Metadata();
  if (t) md.set('authorization', `Bearer ${t}`);
  return md;
};

function gate(kind: StreamSecurity['kind'], limits = { maxStreamAgeMs: 600_000, reauthIntervalMs: 600_000 }) {
  const table: Record<string, ReviewResult> = { [GOOD]: OK };
  const registry = new Registry();
  const logs: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (c: Buffer, _e, cb) => (logs.push(c.toString()), cb()) }));
  const security: StreamSecurity =
    kind === 'tls' ? { kind, credentials: () => grpc.ServerCredentials.createInsecure(), auth: new TokenReviewAuthenticator(new TableReviewer(table), expected) } : { kind };
  const g = new StreamGate({ security, limits, metrics: new StreamMetrics(registry), log, warn: new ThrottledLog(log) });
  const counted = async (name: string) => (await registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`));
  /** The admitted stream's lifetime, and how it ended. */
  const live = (t: string | undefined) =>
    new Promise<{ reason: EndReason; code: string; message: string }>((resolve) => {
      g.lifetime(GW, 'gw-0', t, (reason, code, message) => resolve({ reason, code: grpc.status[code], message }));
    });
  return { g, table, logs, counted, live };
}

describe('stream gate', () => {
  it('without TLS admits any hello, counting nothing', async () => {
    const t = gate('plaintext');
    expect(await t.g.admit(withToken(), hello, 'ipv4:10.0.0.7:1', () => false)).toEqual({ ok: true, token: undefined });
    expect(await t.counted('tollgate_controller_stream_auth_total')).toEqual([]);
  });

  it('with TLS admits the Gateway ServiceAccount token and refuses a stream without one, counted and logged without the token', async () => {
    const t = gate('tls');
    expect(await t.g.admit(withToken(GOOD), hello, 'ipv4:10.0.0.7:1', () => false)).toEqual({ ok: true, token: GOOD });
    const refused = await t.g.admit(withToken(), { ...hello, pod: '' }, 'ipv4:10.0.0.7:1', () => false);
    expect(refused).toMatchObject({ ok: false, code: grpc.status.UNAUTHENTICATED });
    expect(refused?.ok === false && refused.message).toMatch(/^no token: /);
    expect(await t.counted('tollgate_controller_stream_auth_total')).toEqual(['tollgate_controller_stream_auth_total{result="ok"} 1', 'tollgate_controller_stream_auth_total{result="unauthenticated"} 1']);
    expect(t.logs).toHaveLength(1);
    expect(t.logs[0]).toContain('"code":"TG_CONTROLLER_STREAM_REFUSED"');
    expect(t.logs[0]).toContain(`snapshot stream of ${GW} refused to ipv4:10.0.0.7:1: UNAUTHENTICATED`);
    expect(t.logs.join('')).not.toContain('c2VjcmV0');
  });

  it('says nothing of a stream gone while it was checked', async () => {
    const t = gate('tls');
    expect(await t.g.admit(withToken('garbage'), hello, 'ipv4:10.0.0.7:1', () => true)).toBeUndefined();
    expect(t.logs).toEqual([]);
    expect(await t.counted('tollgate_controller_stream_auth_total')).toEqual(['tollgate_controller_stream_auth_total{result="unauthenticated"} 1']);
  });

  it('with TLS re-checks an admitted stream and ends it once its token is refused', async () => {
    const t = gate('tls', { maxStreamAgeMs: 600_000, reauthIntervalMs: 1 });
    const ended = t.live(GOOD);
    delete t.table[GOOD];
    const end = await ended;
    expect(end).toMatchObject({ reason: 'reauth_refused', code: 'UNAUTHENTICATED' });
    expect(end.message).toMatch(/^re-authentication refused: the API server refused the token/);
    expect(await t.counted('tollgate_controller_stream_reauth_total')).toEqual(['tollgate_controller_stream_reauth_total{result="unauthenticated"} 1']);
  });

  it('without TLS ends a stream at its age only, never re-checking it', async () => {
    const t = gate('plaintext', { maxStreamAgeMs: 5, reauthIntervalMs: 1 });
    expect(await t.live(undefined)).toMatchObject({ reason: 'max_age', code: 'UNAVAILABLE' });
    expect(await t.counted('tollgate_controller_stream_reauth_total')).toEqual([]);
  });
});
