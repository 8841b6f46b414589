// The model label of tollgate_llm_tokens_total comes from the client's request body, so its
// values are bounded: the first config.maxModelLabels distinct models keep their own series,
// later ones are counted as "other". Over real sockets against mock-llm.
import type { MockLlm } from '@tollgate/mock-llm';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load-file.js';
import { closedAfterEach, send, simpleConfig, startGateway, type TestGateway, useMockLlm } from './helpers.js';

let llm: MockLlm;
useMockLlm((started) => (llm = started));
const cleanups = closedAfterEach();

async function gateway(settings: Record<string, unknown>): Promise<TestGateway> {
  const route = { name: 'chat', policies: { traffic: { rateLimit: { local: [{ tokens: 1_000_000, unit: 'Hours' }] } } }, backends: [{ host: `127.0.0.1:${llm.port}` }] };
  const gw = await startGateway((port) => ({ config: settings, ...simpleConfig(port, [route]) }));
  cleanups.push(() => gw.close());
  return gw;
}

async function chat(gw: TestGateway, model: string): Promise<void> {
  const r = await send(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-mock-prompt-tokens': '1', 'x-mock-completion-tokens': '2' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(r.status).toBe(200);
}

async function tokenSeries(gw: TestGateway): Promise<Record<string, number>> {
  const text = await (await fetch(`http://${gw.gateway.ops.metrics.address}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^tollgate_llm_tokens_total\{route="main\/chat",model="([^"]*)",source="reported"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

describe('model label cardinality', () => {
  it('keeps the first maxModelLabels models, counts the rest as other', async () => {
    const gw = await gateway({ maxModelLabels: 2 });
    for (const model of ['gpt-a', 'gpt-b', 'random-1', 'gpt-a', 'random-2', 'random-3']) await chat(gw, model);
    expect(await tokenSeries(gw)).toEqual({ 'gpt-a': 6, 'gpt-b': 3, other: 9 });
  });

  it('defaults to 100 distinct models', async () => {
    const gw = await gateway({});
    for (let i = 0; i < 102; i++) await chat(gw, `model-${i}`);
    const series = await tokenSeries(gw);
    expect(Object.keys(series)).toHaveLength(101);
    expect(series['model-99']).toBe(3);
    expect(series.other).toBe(6);
    expect(series['model-100']).toBeUndefined();
  });

  it('a bad maxModelLabels is a config error naming the field', () => {
    const config = { config: { maxModelLabels: -1 }, ...simpleConfig(8080, []) };
    expect(() => parseConfig('gw.yaml', JSON.stringify(config))).toThrow(/maxModelLabels/);
  });
});
