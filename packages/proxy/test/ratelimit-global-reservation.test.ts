// Token reservations of global Tokens descriptors (`tokenReservation: Estimate`, the default),
// through two gateways sharing one budget on the real envoyproxy/ratelimit service and Redis:
// replicas of one route. The backend holds its responses until the test releases them, so
// "in flight" is a state the test controls rather than a race: a request reserves its estimate
// (prompt plus max_tokens) on the service's counter when it is admitted, so requests in flight on
// either replica count against each other; what a reservation holds beyond the usage becomes the
// replica's credit, spent by its next reservations of the key and never refusing anyone.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { send, simpleConfig, startGateway, type RawResponse, type TestGateway } from './helpers.js';
import { heldLlm, settledOrArrived, type HeldLlm } from './support/held-llm.js';
import { counters, rlsAvailability, rlsBinaries, startRls, type RlsService } from './support/rls.js';

const availability = rlsAvailability();
const CONFIGS = { kr: 'domain: kr\n' };
const DAY = 86_400;
// 28 bytes of message content: a prompt estimate of 7 tokens (4 bytes a token).
const CONTENT = 'twenty-eight bytes of prompt';

describe.skipIf(!availability.run)('global Tokens reservations across replicas', () => {
  let rls: RlsService;
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    rls = await startRls(rlsBinaries().found!, { configs: CONFIGS });
  });
  afterAll(async () => {
    await rls?.stop();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });

  async function held(): Promise<HeldLlm> {
    const llm = await heldLlm();
    cleanups.push(() => llm.upstream.close());
    return llm;
  }

  /** A gateway whose one route spends a 100-token daily budget per x-user on the service. */
  async function replica(llm: HeldLlm, tokenReservation?: 'Estimate' | 'None'): Promise<TestGateway> {
    const global = {
      service: { host: rls.address },
      timeout: '2s',
      domain: 'kr',
      ...(tokenReservation ? { tokenReservation } : {}),
      descriptors: [{ unit: 'Tokens', by: { type: 'Header', name: 'x-user' }, limit: { requestsPerUnit: 100, unit: 'Days' } }],
    };
    const gw = await startGateway((port) => simpleConfig(port, [{ name: 'chat', policies: { traffic: { rateLimit: { global } } }, backends: [{ host: llm.upstream.host }] }]));
    cleanups.push(() => gw.close());
    return gw;
  }

  const chat = (gw: TestGateway, user: string, maxTokens: number, usage: number): Promise<RawResponse> =>
    send(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user': user, 'x-usage': String(usage) },
      body: JSON.stringify({ model: 'm', max_tokens: maxTokens, messages: [{ role: 'user', content: CONTENT }] }),
    });

  /** Sends `n` requests at once, alternating between the replicas; resolves once each was refused or reached the backend. */
  async function concurrent(llm: HeldLlm, replicas: TestGateway[], user: string, n: number, maxTokens: number, usage: number) {
    const base = llm.arrived;
    let answered = 0;
    const pending = Array.from({ length: n }, (_, i) =>
      chat(replicas[i % replicas.length]!, user, maxTokens, usage).then((r) => {
        answered++;
        llm.events.emit('progress');
        return r;
      }),
    );
    await settledOrArrived(llm, () => answered, base + n);
    return { arrived: llm.arrived - base, answered: () => Promise.all(pending) };
  }

  /** One request alone: released once it reached the backend; its status (429 if refused). */
  async function alone(llm: HeldLlm, gw: TestGateway, user: string, maxTokens: number, usage: number): Promise<number> {
    const run = await concurrent(llm, [gw], user, 1, maxTokens, usage);
    llm.releaseAll();
    return (await run.answered())[0]!.status;
  }

  const used = async (user: string) => Object.values(await counters(rls, `kr_header.x-user_${user}_`)).reduce((a, b) => a + b, 0);

  it('concurrent requests of one consumer on two replicas: no more are admitted than the budget covers', async () => {
    const llm = await held();
    const replicas = [await replica(llm), await replica(llm)];
    const user = `c-${randomUUID()}`;
    // Each reserves 7 + 23 = 30 and uses 25. Counters before each admission: 0, 30, 60, 90 are
    // within 100; the rest meet 120 or more while those four are in flight, on either replica.
    const run = await concurrent(llm, replicas, user, 10, 23, 25);
    expect(run.arrived).toBe(4);
    llm.releaseAll();
    const statuses = (await run.answered()).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
  });

  it('with tokenReservation None, requests in flight do not see each other: every one is admitted', async () => {
    const llm = await held();
    const replicas = [await replica(llm, 'None'), await replica(llm, 'None')];
    const user = `n-${randomUUID()}`;
    const run = await concurrent(llm, replicas, user, 10, 23, 25);
    expect(run.arrived).toBe(10);
    llm.releaseAll();
    expect((await run.answered()).every((r) => r.status === 200)).toBe(true);
    // 250 tokens charged to a 100-token budget: the overspend reservations prevent.
    expect(await used(user)).toBe(250);
  });

  it("a reservation larger than the usage becomes the replica's credit: the budget admits what it covers, as a local one does", async () => {
    const llm = await held();
    const gw = await replica(llm);
    const user = `s-${randomUUID()}`;
    // Each request reserves 7 + 33 = 40 and uses 10: the counter holds the usage plus what the
    // replica owes back. Eleven are admitted (the eleventh at the budget exactly, as a local
    // token budget admits it), the twelfth is refused: credit never refused anyone.
    const statuses: number[] = [];
    for (let i = 0; i < 12 && !statuses.includes(429); i++) statuses.push(await alone(llm, gw, user, 33, 10));
    expect(statuses).toEqual([...Array.from({ length: 11 }, () => 200), 429]);
    // The service counted the usage (110) and the reservation's part not used by the last
    // settled request (40 - 10 = 30); refused requests reserve nothing that is not owed back.
    expect(await used(user)).toBeGreaterThanOrEqual(110);
    const last = await chat(gw, user, 33, 10);
    expect(last.status).toBe(429);
    expect(last.headers['x-ratelimit-limit']).toBe(`100, 100;w=${DAY}`);
  });

  it('a client that keeps asking once its budget is spent adds nothing more to the counter', async () => {
    const llm = await held();
    const gw = await replica(llm);
    const user = `r-${randomUUID()}`;
    const one = () => alone(llm, gw, user, 23, 60);
    // Reserves 30, uses 60: counters before each admission 0 and 60; the third meets 120.
    expect([await one(), await one(), await one()]).toEqual([200, 200, 429]);
    // The refused request's reservation was counted (the service counts a refused request's
    // hits); later ones, while the budget stays spent, are checked without one.
    expect(await used(user)).toBe(150);
    for (let i = 0; i < 5; i++) expect(await one()).toBe(429);
    expect(await used(user)).toBe(150);
  });
});
