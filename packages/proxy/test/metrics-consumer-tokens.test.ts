// tollgate_consumer_tokens_total over real sockets: apiKey consumers send LLM requests to the
// mock LLM through a standalone proxy with config.consumerMetricsTopN: 2, and /metrics is
// scraped after each step: only the top two consumers by tokens have a series, the others are
// counted as consumer="other", a consumer entering the top replaces the least, and every
// series only grows (one that leaves and enters again continues where it was).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMockLlm, type MockLlm } from '@tollgate/mock-llm';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load-file.js';
import { ConsumerTokens } from '../src/metrics/consumer-tokens.js';
import { send, simpleConfig, startGateway, type TestGateway } from './helpers.js';

const KEYS: Record<string, string> = { alice: 'sk-alice-0123456789', bob: 'sk-bob-0123456789ab', carol: 'sk-carol-0123456789', other: 'sk-other-0123456789' };

let dir: string;
let keyFile: string;
let llm: MockLlm;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-consumer-metrics-'));
  keyFile = join(dir, 'keys.json');
  await writeFile(keyFile, JSON.stringify(Object.entries(KEYS).map(([consumer, key]) => ({ key, consumer }))));
  llm = await startMockLlm({ port: 0 });
});
afterAll(async () => {
  await llm?.close();
  await rm(dir, { recursive: true, force: true });
});

async function gateway(topN: number | undefined): Promise<TestGateway> {
  return startGateway((port) => ({
    ...(topN === undefined ? {} : { config: { consumerMetricsTopN: topN } }),
    ...simpleConfig(port, [{ name: 'chat', policies: { traffic: { apiKey: { file: keyFile }, rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] }]),
  }));
}

async function spend(gw: TestGateway, who: string, tokens: number): Promise<void> {
  const r = await send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEYS[who]!, 'x-mock-prompt-tokens': String(tokens / 2), 'x-mock-completion-tokens': String(tokens / 2) },
    body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(r.status).toBe(200);
}

/** The consumer series of one scrape. */
async function scrape(gw: TestGateway): Promise<Record<string, number>> {
  const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^tollgate_consumer_tokens_total\{consumer="([^"]*)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

describe('tollgate_consumer_tokens_total', () => {
  it('the top N consumers by tokens have a series, the rest are "other"; entering and leaving keeps every series growing', async () => {
    const gw = await gateway(2);
    try {
      await spend(gw, 'alice', 100);
      await spend(gw, 'bob', 50);
      await spend(gw, 'carol', 30);
      expect(await scrape(gw)).toEqual({ alice: 100, bob: 50, other: 30 });
      // carol has spent 70, more than bob's 50: she enters, bob leaves; her series counts from entering.
      await spend(gw, 'carol', 40);
      expect(await scrape(gw)).toEqual({ alice: 100, carol: 40, other: 30 });
      // bob, at 80, passes carol (70) again: his series goes on from 50.
      await spend(gw, 'bob', 30);
      expect(await scrape(gw)).toEqual({ alice: 100, bob: 80, other: 30 });
      // A consumer named "other" never has a series of its own: no two series share labels.
      for (let i = 0; i < 3; i++) await spend(gw, 'other', 100);
      expect(await scrape(gw)).toEqual({ alice: 100, bob: 80, other: 330 });
      const dump = JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { settings: { consumerMetricsTopN: number } };
      expect(dump.settings.consumerMetricsTopN).toBe(2);
    } finally {
      await gw.close();
    }
  });

  it('is 20 consumers by default; 0 exports none', async () => {
    const gw = await gateway(undefined);
    try {
      for (const who of ['alice', 'bob', 'carol']) await spend(gw, who, 10);
      expect(await scrape(gw)).toEqual({ alice: 10, bob: 10, carol: 10, other: 0 });
      expect((JSON.parse((await send(`${gw.adminUrl}/config_dump`)).body) as { settings: { consumerMetricsTopN: number } }).settings.consumerMetricsTopN).toBe(20);
    } finally {
      await gw.close();
    }
    const off = await gateway(0);
    try {
      await spend(off, 'alice', 10);
      expect(await scrape(off)).toEqual({});
    } finally {
      await off.close();
    }
  });

  it('a bad consumerMetricsTopN is a config error naming the field', () => {
    for (const v of [-1, 1001, 2.5, '3']) {
      expect(() => parseConfig('gw.yaml', JSON.stringify({ config: { consumerMetricsTopN: v }, ...simpleConfig(8080, []) }))).toThrow(/consumerMetricsTopN/);
    }
  });

  it('remembers a bounded number of consumers: the half outside the top that spent least is forgotten', () => {
    const t = new ConsumerTokens(new Registry(), 1, 3);
    t.count('big', 10);
    t.count('b', 5);
    t.count('a', 8);
    // Full (3): c makes room by forgetting b, the least outside the top.
    t.count('c', 1);
    // Remembered, b would be at 11 and pass big (10); forgotten, it is at 6.
    t.count('b', 6);
    expect(t.series()).toEqual([
      ['big', 10],
      ['other', 5 + 8 + 1 + 6],
    ]);
  });
});
