// A Backend resource from Kubernetes objects to the provider's socket: translate() reads an
// HTTPRoute to a Backend (its host name resolved by the proxy's DNS cache, here `localhost`)
// and the Secret of its provider key; the snapshot travels over the controller's real stream
// server to a proxy in cluster mode, which calls mock-llm (the provider, answering 401 unless
// its key arrives in Authorization) with the key from the Secret, the client's own key removed.
// A rotated Secret is a new snapshot whose key the next request carries. The proxy's config
// dump, its logs and a trace never hold the key.
import { startMockLlm, type ReceivedRequest } from '@tollgate/mock-llm';
import { translate, type Resources } from '@tollgate/controller';
import { afterEach, describe, expect, it } from 'vitest';
import { onFreePort, send } from './helpers.js';
import { startStreamedProxy } from './support/streamed-proxy.js';
import { backendRouteResources, GATEWAY, meta } from './support/backend-resources.js';

const KEY_V1 = 'sk-cluster-provider-key-v1-abcdef';
const KEY_V2 = 'sk-cluster-provider-key-v2-fedcba';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function resources(port: number, llmPort: number, key: string): Resources {
  return backendRouteResources(
    port,
    {
      apiVersion: 'tollgate.dev/v1alpha1',
      kind: 'Backend',
      metadata: meta('openai', 'edge'),
      spec: { hostname: 'localhost', port: llmPort, provider: { type: 'OpenAI', apiKeySecretRef: { name: 'openai-key' } } },
    },
    { secrets: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'openai-key', namespace: 'edge' }, data: { apiKey: Buffer.from(`${key}\n`).toString('base64') } }], configMaps: [] },
  );
}

describe('Backend resource in cluster mode', () => {
  it('calls the provider at the Backend\'s host name with the key of the Secret, and the rotated key after the Secret changes', async () => {
    let key = KEY_V1;
    const seen: ReceivedRequest[] = [];
    // On the IPv4 and IPv6 loopback alike: whichever address `localhost` resolves to first.
    const llm = await startMockLlm({ host: '::', apiKey: { header: 'authorization', key: () => key }, onRequest: (r) => seen.push(r) });
    cleanups.push(() => llm.close());
    const { proxy, offer, close } = await startStreamedProxy(GATEWAY);
    cleanups.push(close);
    const opts = { controllerName: 'tollgate.dev/gateway-controller' };
    const { port, v1 } = await onFreePort(async (port) => {
      const v1 = translate(resources(port, llm.port, KEY_V1), opts).snapshots.get(GATEWAY)!;
      await offer(v1);
      return { port, v1 };
    });
    const call = () => send(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer sk-client-own' } });
    expect((await call()).status).toBe(200);
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${KEY_V1}`);
    expect(seen.at(-1)!.headers.host).toBe(`localhost:${llm.port}`);

    key = KEY_V2;
    const v2 = translate(resources(port, llm.port, KEY_V2), opts).snapshots.get(GATEWAY)!;
    expect(v2.version).not.toBe(v1.version);
    await offer(v2);
    expect((await call()).status).toBe(200);
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${KEY_V2}`);

    const dump = (await send(`http://${proxy.admin.address}/config_dump`)).body;
    expect(dump).toContain('"origin": "Secret edge/openai-key key apiKey"');
    expect(dump).not.toContain(KEY_V1);
    expect(dump).not.toContain(KEY_V2);
    const backends = JSON.parse((await send(`http://${proxy.admin.address}/backends`)).body) as { backends: { type: string; name: string; host: string }[] };
    expect(backends.backends).toContainEqual(expect.objectContaining({ type: 'Backend', name: 'edge/openai', host: 'localhost' }));
  });
});
