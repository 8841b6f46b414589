// One GET to the API server with a chosen Accept header, through the KubeConfig's credentials
// and TLS settings (the same ones client-node's watches use): what the typed clients cannot
// ask for, such as objects' metadata only (PartialObjectMetadataList).
import https from 'node:https';
import { http } from '@tollgate/kit/node-http';
import type { KubeConfig } from '@kubernetes/client-node';

/** An API server answer other than 2xx, shaped as describeApiError and statusCode read it. */
export class ApiGetError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(`HTTP ${statusCode}`);
  }
}

export interface RawGetOptions {
  readonly accept: string;
  /** A longer answer is an error, not a bigger buffer. */
  readonly maxBytes: number;
  readonly timeoutMs: number;
}

export async function getJson(kc: KubeConfig, path: string, query: Readonly<Record<string, string | undefined>>, o: RawGetOptions): Promise<unknown> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster in the kubeconfig');
  const url = new URL(cluster.server + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
  const opts: https.RequestOptions = { method: 'GET', headers: { Accept: o.accept } };
  await kc.applyToHTTPSOptions(opts);
  const client = url.protocol === 'http:' ? http : https;
  return new Promise((resolve, reject) => {
    const req = client.request(url, opts, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > o.maxBytes) {
          req.destroy(new Error(`GET ${path}: the answer is larger than ${o.maxBytes} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) return reject(new ApiGetError(status, text.slice(0, 4096)));
        try {
          resolve(JSON.parse(text));
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
    req.setTimeout(o.timeoutMs, () => req.destroy(new Error(`GET ${path}: no answer within ${o.timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
