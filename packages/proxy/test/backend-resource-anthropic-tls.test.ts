// A Backend resource on TLS with provider Anthropic, over real sockets: translate() reads an
// HTTPRoute to a Backend (`localhost`, its CA from a ConfigMap, its key from a Secret); the
// snapshot travels over the controller's stream to a proxy in cluster mode; the official
// OpenAI client sends Chat Completions through it; mock-llm serves HTTPS with a certificate of
// a test CA and answers 401 unless the key arrives in `x-api-key`. The request reaches it
// translated to Anthropic's Messages API (with the provider's key and anthropic-version), and
// the answer comes back in the OpenAI format.
import { startMockLlm, type ReceivedRequest } from '@tollgate/mock-llm';
import { translate, type Resources } from '@tollgate/controller';
import { issueTestCertificate } from '@tollgate/testkit';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { onFreePort } from './helpers.js';
import { startStreamedProxy } from './support/streamed-proxy.js';
import { backendRouteResources, GATEWAY, meta } from './support/backend-resources.js';

const KEY = 'sk-ant-provider-key-0123456789';
const ca = issueTestCertificate({ commonName: 'provider-ca', ca: true });
const serving = issueTestCertificate({ commonName: 'localhost', names: ['localhost'], issuer: ca });
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function resources(port: number, llmPort: number): Resources {
  return backendRouteResources(
    port,
    {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'Backend',
      metadata: meta('anthropic', 'edge'),
      spec: {
        hostname: 'localhost',
        port: llmPort,
        tls: { caCertificateRefs: [{ name: 'provider-ca' }] },
        provider: { type: 'Anthropic', apiKeySecretRef: { name: 'anthropic-key' } },
      },
    },
    {
      secrets: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'anthropic-key', namespace: 'edge' }, data: { apiKey: Buffer.from(KEY).toString('base64') } }],
      configMaps: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'provider-ca', namespace: 'edge' }, data: { 'ca.crt': ca.cert } }],
    },
  );
}

describe('a Backend on TLS with provider Anthropic', () => {
  it('translates an OpenAI client\'s chat completion to the Messages API over verified TLS, with the provider key in x-api-key', async () => {
    const seen: ReceivedRequest[] = [];
    const bodies: Record<string, unknown>[] = [];
    const llm = await startMockLlm({
      host: '::',
      tls: { cert: serving.cert, key: serving.key },
      apiKey: { header: 'x-api-key', key: KEY },
      onRequest: (r) => seen.push(r),
      onRequestBody: (_r, body) => bodies.push(JSON.parse(body.toString('utf8')) as Record<string, unknown>),
    });
    cleanups.push(() => llm.close());
    const { close, offer } = await startStreamedProxy(GATEWAY);
    cleanups.push(close);
    const port = await onFreePort(async (port) => {
      const result = translate(resources(port, llm.port), { controllerName: 'tollgate.dev/gateway-controller' });
      expect(result.status.backends?.get('edge/anthropic')?.conditions).toContainEqual(expect.objectContaining({ type: 'Accepted', status: 'True' }));
      await offer(result.snapshots.get(GATEWAY)!);
      return port;
    });
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-client-own', maxRetries: 0 });

    const answer = await client.chat.completions.create({ model: 'claude-test', max_completion_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.object).toBe('chat.completion');
    expect(answer.choices[0]!.message.role).toBe('assistant');
    expect(answer.usage?.total_tokens).toBeGreaterThan(0);

    const got = seen.at(-1)!;
    expect(got.url).toBe('/v1/messages');
    expect(got.headers['x-api-key']).toBe(KEY);
    expect(got.headers['anthropic-version']).toBe('2023-06-01');
    expect(got.headers.authorization).toBeUndefined();
    expect(bodies.at(-1)).toMatchObject({ model: 'claude-test', max_tokens: 16, messages: [{ role: 'user' }] });

    const stream = await client.chat.completions.create({ model: 'claude-test', max_completion_tokens: 16, messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    expect(seen.at(-1)!.headers['x-api-key']).toBe(KEY);
  });
});
