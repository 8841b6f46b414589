// The body a metered route sends upstream is the client's, byte for byte, apart from the one
// member the gateway adds (stream_options.include_usage) when it streams without asking for usage.
import { afterEach, describe, expect, it } from 'vitest';
import { scanTopLevelObject } from '../src/llm/json-scan.js';
import { echoed, send, simpleConfig, startGateway, startUpstream } from './helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function sentUpstream(body: string): Promise<string> {
  const up = await startUpstream();
  cleanups.push(() => up.close());
  const route = { name: 'chat', policies: { traffic: { rateLimit: { local: [{ tokens: 1000000, unit: 'Minutes' }] } } }, backends: [{ host: up.host }] };
  const gw = await startGateway((port) => simpleConfig(port, [route]));
  cleanups.push(() => gw.close());
  const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  expect(r.status).toBe(200);
  return echoed(r).body;
}

describe('include_usage injection', () => {
  it('adds the member without re-encoding the rest (big integers, duplicate keys, spacing, UTF-8)', async () => {
    const body = '{ "model" : "m", "stream": true, "seed": 12345678901234567890, "x": 1, "x": 2, "messages": [{"role":"user","content":"héllo 😀 \\"}{\\""}] }';
    expect(await sentUpstream(body)).toBe(`${body.slice(0, -1)},"stream_options":{"include_usage":true}}`);
  });

  it('sets include_usage inside an existing stream_options, keeping its other fields', async () => {
    const body = '{"model":"m","stream_options":{"include_usage":false,"extra":7},"stream":true,"n":1.50}';
    expect(await sentUpstream(body)).toBe('{"model":"m","stream_options":{"include_usage":true,"extra":7},"stream":true,"n":1.50}');
  });

  it('leaves a body that already asks for usage untouched', async () => {
    const body = '{"model":"m","stream":true,"stream_options":{"include_usage":true},"big":9007199254740993}';
    expect(await sentUpstream(body)).toBe(body);
  });
});

describe('scanTopLevelObject', () => {
  it('finds value spans of the last member with each key, skipping nested and quoted structure', () => {
    const text = '{"a": {"b": [1, "}", {"c": 2}]}, "s" : "x,\\"y" ,"a":3 }';
    const buf = Buffer.from(text);
    const { members, close } = scanTopLevelObject(buf);
    const value = (k: string) => {
      const s = members.get(k)!;
      return text.slice(s.start, s.end);
    };
    expect(value('a')).toBe('3');
    expect(value('s')).toBe('"x,\\"y"');
    expect(close).toBe(text.length - 1);
  });
});
