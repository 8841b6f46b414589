// Provider backends over real sockets: mock-llm plays each provider and answers 401 unless the
// key arrives in that provider's header. The gateway removes whatever the client sent in the
// key headers, sets the key read from its file, maps the client's API root /v1 to the
// provider's base path (Azure's deployment and api-version included) and sends the provider's
// host. A rotated key file is used for the next request without a restart; a bad edit is
// refused naming the field and the last good key keeps serving. The key never shows in
// config_dump, traces or logs.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../src/config/load-file.js';
import { beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startMockLlm, type MockLlmOptions, type ReceivedRequest } from '@tollgate/mock-llm';
import { closedAfterEach, openTrace, send, simpleConfig, startGateway, type TestGateway } from './helpers.js';
import { replaceNamedFile } from './support/gateway-files.js';

const KEY = 'sk-provider-0123456789abcdefABCDEF';
const ROTATED = 'sk-provider-rotated-9876543210zyx';
const CLIENT_KEY = 'sk-client-own-key-should-never-pass';

const cleanups = closedAfterEach();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tollgate-provider-'));
  return () => rm(dir, { recursive: true, force: true });
});

interface Setup {
  readonly gw: TestGateway;
  readonly seen: ReceivedRequest[];
  readonly keyFile: string;
  readonly llmHost: string;
}

let n = 0;
/** mock-llm as the provider (`mock`), the gateway in front with `provider` on its backend. */
async function setup(mock: MockLlmOptions, provider: Record<string, unknown>, opts: { key?: string | null; config?: Record<string, unknown> } = {}): Promise<Setup> {
  const keyFile = join(dir, `key-${n++}`);
  if (opts.key !== null) await writeFile(keyFile, `${opts.key ?? KEY}\n`);
  const seen: ReceivedRequest[] = [];
  const llm = await startMockLlm({ ...mock, onRequest: (r) => seen.push(r) });
  cleanups.push(() => llm.close());
  const llmHost = `127.0.0.1:${llm.port}`;
  const apiKey = opts.key === null ? {} : { apiKey: { file: keyFile } };
  const routes = [{ name: 'llm', backends: [{ host: llmHost, provider: { ...apiKey, ...provider } }] }];
  const gw = await startGateway((port) => ({ ...opts.config, ...simpleConfig(port, routes) }));
  cleanups.push(() => gw.close());
  return { gw, seen, keyFile, llmHost };
}

const chat = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
const clientCredentials = { authorization: `Bearer ${CLIENT_KEY}`, 'x-api-key': CLIENT_KEY, 'api-key': CLIENT_KEY };

describe('provider presets', () => {
  it('OpenAI: the key as Authorization Bearer, the client\'s key headers removed, /v1 kept, the provider\'s host', async () => {
    let key = KEY;
    const { gw, seen, llmHost } = await setup({ apiKey: { header: 'authorization', key: () => key } }, { type: 'OpenAI' });
    const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', host: 'gateway.example.com', ...clientCredentials }, body: chat });
    expect(r.status).toBe(200);
    const got = seen.at(-1)!;
    expect(got.url).toBe('/v1/chat/completions');
    expect(got.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(got.headers['x-api-key']).toBeUndefined();
    expect(got.headers['api-key']).toBeUndefined();
    expect(got.headers.host).toBe(llmHost);
    // The provider's own check is what fails when the gateway sends something else.
    key = 'sk-something-else';
    expect((await send(`${gw.url}/v1/models`)).status).toBe(401);
  });

  it('OpenAI: the official client, pointed at the gateway with a key of its own, is answered with the gateway\'s key', async () => {
    const { gw, seen } = await setup({ apiKey: { header: 'authorization', key: KEY } }, { type: 'OpenAI' });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CLIENT_KEY, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello there' }] });
    expect(completion.choices[0]!.message.content).toBeTruthy();
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('AzureOpenAI: the key in api-key, /v1 mapped to the deployment, api-version set (the client\'s replaced)', async () => {
    const { gw, seen } = await setup(
      { apiKey: { header: 'api-key', key: KEY }, basePath: '/openai/deployments/gpt-4o-prod', apiVersion: '2024-10-21' },
      { type: 'AzureOpenAI', deployment: 'gpt-4o-prod' },
    );
    const r = await send(`${gw.url}/v1/chat/completions?api-version=1999-01-01&x=1`, { method: 'POST', headers: { 'content-type': 'application/json', ...clientCredentials }, body: chat });
    expect(r.status).toBe(200);
    const got = seen.at(-1)!;
    expect(got.url).toBe('/openai/deployments/gpt-4o-prod/chat/completions?x=1&api-version=2024-10-21');
    expect(got.headers['api-key']).toBe(KEY);
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-api-key']).toBeUndefined();
  });

  it('AzureOpenAI: apiVersion of the backend\'s choosing', async () => {
    const { gw, seen } = await setup(
      { apiKey: { header: 'api-key', key: KEY }, basePath: '/openai/deployments/d1', apiVersion: '2025-04-01-preview' },
      { type: 'AzureOpenAI', deployment: 'd1', apiVersion: '2025-04-01-preview' },
    );
    expect((await send(`${gw.url}/v1/models`)).status).toBe(200);
    expect(seen.at(-1)!.url).toBe('/openai/deployments/d1/models?api-version=2025-04-01-preview');
  });

  it('Anthropic: the key in x-api-key with anthropic-version; a version the client sent stands', async () => {
    const { gw, seen } = await setup({ apiKey: { header: 'x-api-key', key: KEY } }, { type: 'Anthropic' });
    expect((await send(`${gw.url}/v1/models`, { headers: clientCredentials })).status).toBe(200);
    let got = seen.at(-1)!;
    expect(got.headers['x-api-key']).toBe(KEY);
    expect(got.headers['anthropic-version']).toBe('2023-06-01');
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['api-key']).toBeUndefined();
    expect((await send(`${gw.url}/v1/models`, { headers: { 'anthropic-version': '2024-01-01' } })).status).toBe(200);
    got = seen.at(-1)!;
    expect(got.headers['anthropic-version']).toBe('2024-01-01');
  });

  it('OpenAICompatible with a base path of its own (Gemini\'s /v1beta/openai); without a key the client\'s headers pass', async () => {
    const { gw, seen } = await setup({ basePath: '/v1beta/openai' }, { type: 'OpenAICompatible', basePath: '/v1beta/openai/' }, { key: null });
    const r = await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}` }, body: chat });
    expect(r.status).toBe(200);
    expect(seen.at(-1)!.url).toBe('/v1beta/openai/chat/completions');
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${CLIENT_KEY}`);
    // A path outside the client's API root is prefixed whole.
    expect((await send(`${gw.url}/models`)).status).toBe(200);
    expect(seen.at(-1)!.url).toBe('/v1beta/openai/models');
  });
});

describe('the key file', () => {
  it('a rotated key file is used for the next request, without a restart', async () => {
    let key = KEY;
    const { gw, seen, keyFile } = await setup({ apiKey: { header: 'authorization', key: () => key } }, { type: 'OpenAI' });
    expect((await send(`${gw.url}/v1/models`)).status).toBe(200);
    key = ROTATED;
    expect((await send(`${gw.url}/v1/models`)).status).toBe(401);
    expect(await replaceNamedFile(gw, keyFile, `${ROTATED}\n`)).toBe('reloaded');
    expect((await send(`${gw.url}/v1/models`)).status).toBe(200);
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${ROTATED}`);
  });

  it('a bad edit (empty, two keys on lines) is refused naming the field, never the key, and the last good key keeps serving', async () => {
    const { gw, seen, keyFile } = await setup({ apiKey: { header: 'authorization', key: KEY } }, { type: 'OpenAI' });
    expect(await replaceNamedFile(gw, keyFile, '\n')).toBe('refused');
    let line = gw.logs.messages().find((m) => m.startsWith('config reload refused'))!;
    expect(line).toContain(`binds[0].listeners[0].routes[0].backends[0].provider.apiKey.file: file ${keyFile} is empty`);
    expect(await replaceNamedFile(gw, keyFile, `${ROTATED}\n${KEY}\n`)).toBe('refused');
    line = gw.logs.messages().filter((m) => m.startsWith('config reload refused')).at(-1)!;
    expect(line).toContain('provider.apiKey.file');
    expect(line).not.toContain(ROTATED);
    expect(line).not.toContain(KEY);
    expect((await send(`${gw.url}/v1/models`)).status).toBe(200);
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('refuses to start without the key file, naming the field', async () => {
    const missing = join(dir, 'no-such-key');
    await expect(
      startGateway((port) => simpleConfig(port, [{ name: 'llm', backends: [{ host: '127.0.0.1:9', provider: { type: 'OpenAI', apiKey: { file: missing } } }] }])),
    ).rejects.toThrow(`binds[0].listeners[0].routes[0].backends[0].provider.apiKey.file: cannot read ${missing}: no such file`);
  });

  it('refuses fields of another provider type and an Azure backend without its deployment', async () => {
    const cfg = (provider: unknown) => (port: number) => simpleConfig(port, [{ name: 'llm', backends: [{ host: '127.0.0.1:9', provider }] }]);
    await expect(startGateway(cfg({ type: 'OpenAI', deployment: 'x' }))).rejects.toThrow('backends[0].provider.deployment: is for type AzureOpenAI only; type OpenAI has none');
    await expect(startGateway(cfg({ type: 'Anthropic', apiVersion: '2024-10-21' }))).rejects.toThrow('backends[0].provider.apiVersion: is for type AzureOpenAI only');
    await expect(startGateway(cfg({ type: 'AzureOpenAI' }))).rejects.toThrow('backends[0].provider.deployment: required field is missing: type AzureOpenAI needs the deployment');
    await expect(startGateway(cfg({ type: 'OpenAI', basePath: '/a/../b' }))).rejects.toThrow('backends[0].provider.basePath: got "/a/../b"; a base path has no empty, "." or ".." segments');
    await expect(startGateway(cfg({ type: 'Gemini' }))).rejects.toThrow(/backends\[0\]\.provider\.type/);
  });
});

describe('the provider key is never shown', () => {
  it('config_dump shows where the key is read, not the key; traces and logs (at trace level) never hold it', async () => {
    const { gw, keyFile } = await setup({ apiKey: { header: 'authorization', key: KEY } }, { type: 'OpenAI' }, { config: { config: { logLevel: 'trace' } } });
    const dump = await (await fetch(`${gw.adminUrl}/config_dump`)).text();
    expect(dump).toContain(`"origin": "file ${keyFile}"`);
    expect(dump).toContain('"value": "[redacted]"');
    expect(dump).not.toContain(KEY);
    const trace = await openTrace(gw.adminUrl);
    await trace.armed;
    expect((await send(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...clientCredentials }, body: chat })).status).toBe(200);
    const events = await trace.events;
    const final = events.map((e) => e.message).find((m) => m.type === 'requestSnapshot' && m.stage === 'final request');
    expect(JSON.stringify(final)).toContain('"authorization":"[redacted]"');
    expect(JSON.stringify(final)).toContain('"path":"/v1/chat/completions"');
    const text = JSON.stringify(events);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(CLIENT_KEY);
    const logs = JSON.stringify(gw.logs.lines);
    expect(logs).not.toContain(KEY);
  });
});

describe('examples/providers-openai.yaml', () => {
  it('loads with its key files: OpenAI and Azure by weight, Anthropic, a local server without a key', async () => {
    const loaded = await loadConfigFile(fileURLToPath(new URL('../../../examples/providers-openai.yaml', import.meta.url)));
    const routes = loaded.snapshot.binds[0]!.listeners[0]!.routes;
    const providers = routes.map((r) => r.backends.map((b) => (b.kind === 'static' ? b.provider?.type : undefined)));
    expect(providers).toEqual([['OpenAI', 'AzureOpenAI'], ['Anthropic'], ['OpenAICompatible']]);
    const azure = routes[0]!.backends[1]!;
    expect(azure.kind === 'static' && azure.provider).toMatchObject({ basePath: '/openai/deployments/gpt-4o-prod', apiVersion: '2024-10-21' });
    expect(loaded.namedFiles.filter((f) => f.endsWith('.key'))).toHaveLength(3);
  });
});
