// Budgets see the transformed request: over real sockets, against a backend that holds its
// responses (so what requests in flight reserve is a state the test reads, not a race), a
// transformation that forces the model and caps max_tokens changes what keyed token budgets
// reserve (the forced model's key, the capped amount), at the route and at the Gateway level,
// and a Gateway-level token budget that reads no consumer waits for the transformation too
// (docs/transformation.md, "Order on a request").
import { afterEach, describe, expect, it } from 'vitest';
import type { BudgetRow } from '@tollgate/api';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { send, simpleConfig, startGateway, type RawResponse, type TestGateway } from './helpers.js';
import { heldLlm, settledOrArrived, type HeldLlm } from './support/held-llm.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const KEY = 'sk-alice-0123456789abcdef';
// 28 bytes of message content: a prompt estimate of 7 tokens (4 bytes a token).
const CONTENT = 'twenty-eight bytes of prompt';
const CAP = 10;

/** Forces the model and caps max_tokens at CAP (and the newer field with it). */
const TRANSFORMATION = {
  request: {
    body: {
      set: [
        { path: 'model', value: '"small"' },
        { path: 'max_tokens', value: `llm.maxTokens == 0 || llm.maxTokens > ${CAP} ? ${CAP} : llm.maxTokens` },
      ],
      remove: ['max_completion_tokens'],
    },
  },
};

async function held(): Promise<HeldLlm> {
  const llm = await heldLlm();
  cleanups.push(async () => {
    llm.releaseAll();
    await llm.upstream.close();
  });
  return llm;
}

async function keyFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-transform-budgets-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'keys.json');
  await writeFile(file, JSON.stringify([{ key: KEY, consumer: 'alice', group: 'team-a' }]));
  return file;
}

async function gateway(routes: unknown[], listener: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway((port) => simpleConfig(port, routes, listener));
  cleanups.push(() => gw.close());
  return gw;
}

function chat(gw: TestGateway, body: Record<string, unknown>): Promise<RawResponse> {
  return send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'x-usage': '20' },
    body: JSON.stringify({ messages: [{ role: 'user', content: CONTENT }], ...body }),
  });
}

async function budgets(gw: TestGateway): Promise<BudgetRow[]> {
  return (JSON.parse((await send(`${gw.adminUrl}/budgets`)).body) as { budgets: BudgetRow[] }).budgets;
}

describe('keyed token budgets after a transformation', () => {
  it('reserve for the forced model and the capped max_tokens, at the route and at the Gateway level', async () => {
    const llm = await held();
    const keys = await keyFile();
    const gw = await gateway(
      [
        {
          name: 'chat',
          policies: {
            traffic: {
              apiKey: { file: keys },
              transformation: TRANSFORMATION,
              rateLimit: { local: [{ tokens: 1000, unit: 'Hours', by: { type: 'Expression', expression: 'llm.model' } }] },
            },
          },
          backends: [{ host: llm.upstream.host }],
        },
      ],
      { policies: { traffic: { rateLimit: { local: [{ tokens: 5000, unit: 'Hours', by: { type: 'Consumer' } }] } } } },
    );
    let answered = 0;
    const pending = chat(gw, { model: 'big', max_tokens: 500 }).then((r) => {
      answered++;
      llm.events.emit('progress');
      return r;
    });
    await settledOrArrived(llm, () => answered, 1);
    expect(llm.arrived).toBe(1);
    const rows = await budgets(gw);
    // 7 for the prompt and 10 for the capped max_tokens, not 7 + 500; under the forced model's key.
    expect(rows.map((r) => [r.level, r.by, r.key, r.reserved])).toEqual(
      expect.arrayContaining([
        ['route', 'key', 'small', 7 + CAP],
        ['gateway', 'consumer', 'alice', 7 + CAP],
      ]),
    );
    expect(rows.some((r) => r.key === 'big')).toBe(false);
    llm.releaseAll();
    expect((await pending).status).toBe(200);
    const after = await budgets(gw);
    expect(after.find((r) => r.key === 'small')).toMatchObject({ used: 20, reserved: 0 });
  });
});

describe('a budget keyed by a header the transformation sets', () => {
  it('counts the value the transformation wrote, not the one the client sent', async () => {
    const llm = await held();
    const keys = await keyFile();
    const gw = await gateway([
      {
        name: 'chat',
        policies: {
          traffic: {
            apiKey: { file: keys },
            transformation: { request: { headers: { set: [{ name: 'x-tier', value: 'consumer.group' }] } } },
            rateLimit: { local: [{ requests: 100, unit: 'Hours', by: { type: 'Header', name: 'x-tier' } }] },
          },
        },
        backends: [{ host: llm.upstream.host }],
      },
    ]);
    const r = send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'x-tier': 'gold', 'content-type': 'application/json' }, body: '{"messages":[]}' });
    await settledOrArrived(llm, () => 0, 1);
    expect((await budgets(gw)).map((b) => [b.by, b.key, b.used])).toEqual([['header.x-tier', 'team-a', 1]]);
    llm.releaseAll();
    expect((await r).status).toBe(200);
  });
});

describe('a Gateway-level token budget that reads no consumer', () => {
  it('waits for a route\'s transformation: the capped reservations are what it admits', async () => {
    const llm = await held();
    const gw = await gateway(
      [{ name: 'chat', policies: { traffic: { transformation: TRANSFORMATION } }, backends: [{ host: llm.upstream.host }] }],
      { policies: { traffic: { rateLimit: { local: [{ tokens: 100, unit: 'Hours' }] } } } },
    );
    // Each reserves 7 + 10 = 17 once capped: 0, 17, ... 85 are within 100, so six are admitted
    // while all are in flight. Reserved before the transformation (7 + 500), only the first was.
    let answered = 0;
    const statuses: number[] = [];
    const pending = Array.from({ length: 10 }, () =>
      chat(gw, { model: 'big', max_tokens: 500 }).then((r) => {
        answered++;
        statuses.push(r.status);
        llm.events.emit('progress');
        return r;
      }),
    );
    await settledOrArrived(llm, () => answered, 10);
    expect(llm.arrived).toBe(6);
    expect(statuses).toEqual([429, 429, 429, 429]);
    llm.releaseAll();
    await Promise.all(pending);
  });
});
