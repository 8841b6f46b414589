// A minimal client of the bench cluster's API server (the admin client certificate of its
// kubeconfig) for the propagation benches: one HTTPS request per call, so an apply is timed
// without starting kubectl (which costs 100-500 ms here and would swamp what is measured).
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import type { Cluster } from '../e2e/lib/cluster.js';

interface Kubeconfig {
  clusters: { cluster: { server: string; 'certificate-authority': string } }[];
  users: { user: { 'client-certificate': string; 'client-key': string } }[];
}

export class KubeApi {
  readonly #agent: Agent;
  readonly #server: URL;

  constructor(cluster: Cluster) {
    const k = JSON.parse(readFileSync(cluster.kubeconfig, 'utf8')) as Kubeconfig;
    this.#server = new URL(k.clusters[0]!.cluster.server);
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: 32,
      ca: readFileSync(k.clusters[0]!.cluster['certificate-authority']),
      cert: readFileSync(k.users[0]!.user['client-certificate']),
      key: readFileSync(k.users[0]!.user['client-key']),
    });
  }

  call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        { host: this.#server.hostname, port: this.#server.port, path, method, agent: this.#agent, headers: data ? { 'content-type': contentType, 'content-length': Buffer.byteLength(data) } : {} },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if ((res.statusCode ?? 0) >= 300) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 500)}`));
            else resolve(text ? JSON.parse(text) : null);
          });
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  }

  create(path: string, obj: unknown): Promise<unknown> {
    return this.call('POST', path, obj);
  }

  mergePatch(path: string, patch: unknown): Promise<unknown> {
    return this.call('PATCH', path, patch, 'application/merge-patch+json');
  }

  close(): void {
    this.#agent.destroy();
  }
}

export const httpRoute = (namespace: string, name: string, gateway: string, path: string, service: string) => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name, namespace },
  spec: {
    parentRefs: [{ name: gateway }],
    rules: [{ matches: [{ path: { type: 'PathPrefix', value: path } }], backendRefs: [{ name: service, port: 80 }] }],
  },
});

export const routesPath = (ns: string) => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/httproutes`;

/** Creates `objects` with at most `concurrency` requests in flight. */
export async function createAll(api: KubeApi, path: (o: { metadata: { namespace: string } }) => string, objects: { metadata: { namespace: string } }[], concurrency = 16): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < objects.length) {
        const o = objects[next++]!;
        await api.create(path(o), o);
      }
    }),
  );
}

export const pct = (xs: readonly number[], p: number): number => {
  if (!xs.length) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
