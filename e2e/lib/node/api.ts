// Reads of the e2e node's API server during its start, over one kept-alive TLS connection with
// the admin certificate. The start polls several conditions ten times a second; a kubectl
// process per poll costs a Go program's start each time, which on a small machine slows the
// very components being waited for.
import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import type { ClusterCerts } from '../certs.js';

export interface ApiReader {
  /** The object at `path` (e.g. /api/v1/nodes/x), or undefined when it is not there (yet) or the server does not answer. */
  get<T>(path: string): Promise<T | undefined>;
  close(): void;
}

export function apiReader(host: string, port: number, certs: ClusterCerts): ApiReader {
  const agent = new Agent({
    keepAlive: true,
    maxSockets: 2,
    ca: readFileSync(certs.caCert),
    cert: readFileSync(certs.adminCert),
    key: readFileSync(certs.adminKey),
  });
  return {
    get: <T>(path: string) =>
      new Promise<T | undefined>((resolve) => {
        const req = request({ host, port, path, agent, timeout: 2_000, headers: { accept: 'application/json' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            if (res.statusCode !== 200) return resolve(undefined);
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as T);
            } catch {
              resolve(undefined);
            }
          });
          res.on('error', () => resolve(undefined));
        });
        req.on('error', () => resolve(undefined));
        req.on('timeout', () => req.destroy());
        req.end();
      }),
    close: () => agent.destroy(),
  };
}

interface Condition {
  type: string;
  status: string;
}

/** Whether the node's Ready condition is True. */
export function nodeReady(node: { status?: { conditions?: Condition[] } } | undefined): boolean {
  return !!node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}

interface Deployment {
  metadata?: { generation?: number };
  spec?: { replicas?: number };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
}

/** What `kubectl rollout status` waits for: the current generation observed, every replica updated and available, no old ones left. */
export function rolledOut(d: Deployment | undefined): boolean {
  if (!d?.status) return false;
  const want = d.spec?.replicas ?? 1;
  const s = d.status;
  return (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) && (s.updatedReplicas ?? 0) === want && (s.replicas ?? 0) === want && (s.availableReplicas ?? 0) === want;
}
