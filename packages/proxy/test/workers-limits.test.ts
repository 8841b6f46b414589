// Local limits hold for the process, not per thread: with several threads serving the same
// route, concurrent requests spread across them by the kernel meet one set of buckets and
// windows in shared memory. Each case runs against a backend that holds its responses (token
// reservations stay in flight until the test releases them) or answers at once. Worker threads
// run the built proxy (dist/).
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { closedAfterEach, send, simpleConfig, startGateway, startUpstream, type RawResponse, type TestGateway } from './helpers.js';
import { heldBurst, heldLlm } from './support/held-llm.js';

const cleanups = closedAfterEach();

function route(backend: string, local: unknown[]) {
  return { name: 'chat', matches: [{ path: { type: 'Exact', value: '/v1/chat/completions' } }], policies: { traffic: { rateLimit: { local } } }, backends: [{ host: backend }] };
}

async function gateway(threads: number, backend: string, local: unknown[]): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, [route(backend, local)]), { workers: threads });
  cleanups.push(() => gw.close());
  return gw;
}

// 28 bytes of message content: a prompt estimate of 7 tokens.
const CONTENT = 'twenty-eight bytes of prompt';

function chat(gw: TestGateway, opts: { maxTokens?: number; headers?: Record<string, string> } = {}): Promise<RawResponse> {
  const body = { model: 'm', messages: [{ role: 'user', content: CONTENT }], ...(opts.maxTokens === undefined ? {} : { max_tokens: opts.maxTokens }) };
  return send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-usage': '0', ...opts.headers }, body: JSON.stringify(body) });
}

/** Requests each thread has begun, by worker index. */
async function started(gw: TestGateway): Promise<number[]> {
  const rows = ((await (await fetch(`${gw.adminUrl}/workers`)).json()) as { workers: { figures: { requestsStarted: number } | null }[] }).workers;
  return rows.map((r) => r.figures?.requestsStarted ?? 0);
}

function statuses(answers: readonly RawResponse[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
}

describe.each([2, 4])('local limits on %i threads', (threads) => {
  it('200 concurrent requests against a limit of 5 admit exactly 5, whichever threads take them', async () => {
    const up = await startUpstream((_req, res) => res.end('{}'));
    cleanups.push(() => up.close());
    const gw = await gateway(threads, up.host, [{ requests: 5, unit: 'Hours' }]);
    const before = await started(gw);
    const answers = await Promise.all(Array.from({ length: 200 }, () => chat(gw)));
    expect(statuses(answers)).toEqual({ 200: 5, 429: 195 });
    const spread = (await started(gw)).map((n, i) => n - before[i]!);
    expect(spread.reduce((a, b) => a + b, 0)).toBe(200);
    // More than one thread took part: the count is not one thread's.
    expect(spread.filter((n) => n > 0).length).toBeGreaterThan(1);
  });

  it('a keyed limit of 3 admits exactly 3 of each key value, 50 concurrent requests a key', async () => {
    const up = await startUpstream((_req, res) => res.end('{}'));
    cleanups.push(() => up.close());
    const gw = await gateway(threads, up.host, [{ requests: 3, unit: 'Hours', by: { type: 'Header', name: 'x-user' } }]);
    const users = ['a', 'b', 'c', 'd'];
    const answers = await Promise.all(users.flatMap((user) => Array.from({ length: 50 }, () => chat(gw, { headers: { 'x-user': user } }).then((r) => [user, r.status] as const))));
    for (const user of users) expect(answers.filter(([u, s]) => u === user && s === 200)).toHaveLength(3);
    expect(answers.filter(([, s]) => s === 429)).toHaveLength(200 - 12);
  });

  it('token reservations: concurrent requests admit no more than the budget covers, across threads', async () => {
    const llm = await heldLlm();
    cleanups.push(() => llm.upstream.close());
    // Each reserves 7 + 43 = 50: a window of 120 admits while usage plus reservations is at
    // most 120, so exactly three (0, 50 and 100 reserved when each was checked) get through.
    const gw = await gateway(threads, llm.upstream.host, [{ tokens: 120, unit: 'Hours' }]);
    const pending = await heldBurst(llm, 60, () => chat(gw, { maxTokens: 43 }));
    expect(llm.arrived).toBe(3);
    llm.releaseAll();
    expect(statuses(await Promise.all(pending))).toEqual({ 200: 3, 429: 57 });
  });
});

describe('a worker thread that dies', () => {
  it('gives back the token reservations of the requests it held', async () => {
    const llm = await heldLlm();
    cleanups.push(() => llm.upstream.close());
    // Each reserves 50 of a window of 60: two may be in flight at once, not three.
    const gw = await gateway(2, llm.upstream.host, [{ tokens: 60, unit: 'Hours' }]);
    // Requests one at a time until one is held by worker 1 (the kernel picks the thread of
    // each connection); one held by the main thread is answered and settles at no usage.
    let onWorker: Promise<RawResponse> | null = null;
    for (let i = 0; i < 64 && !onWorker; i++) {
      const before = await started(gw);
      const arrived = once(llm.events, 'arrived');
      const request = chat(gw, { maxTokens: 43 });
      await arrived;
      const after = await started(gw);
      if (after[1]! > before[1]!) onWorker = request;
      else {
        llm.releaseAll();
        await request;
      }
    }
    expect(onWorker).not.toBeNull();
    const lost = onWorker!.then(
      () => 'answered',
      () => 'lost',
    );
    const pool = gw.gateway.workers!;
    const restarted = once(pool, 'restarted');
    await pool.kill(1);
    expect(await lost).toBe('lost');
    await restarted;
    expect(gw.logs.messages().some((m) => m.startsWith('worker 1 is gone: gave back what it held'))).toBe(true);
    // Its 50 reserved tokens are back: two requests are admitted again (with them still held,
    // the second would meet 100 reserved of 60, and be refused).
    const first = chat(gw, { maxTokens: 43 });
    await once(llm.events, 'arrived');
    const second = chat(gw, { maxTokens: 43 });
    // Admitted, it arrives and is held; refused, it is answered at once.
    await Promise.race([once(llm.events, 'arrived'), second]);
    llm.releaseAll();
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
  });
});
