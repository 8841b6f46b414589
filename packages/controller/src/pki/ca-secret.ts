// Where the CA lives: one Secret in the controller's namespace (default `tollgate-ca`, keys
// ca.crt and ca.key), created by the first replica that finds none and reused by every
// replica, every restart and every `helm upgrade` after (the chart does not template it, so
// helm never touches it). Creation is a plain create: when two replicas race, the API server
// keeps the first and the other reads it back, so no leadership is needed.
//
// A Secret that is present but unusable (not a CA, a wrong key, expired) is never replaced
// silently: proxies trust the CA they were given, and a new one would cut them off until their
// ConfigMap is updated. The controller stops with an error naming the Secret and the fix.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { statusCode } from '../kube/errors.js';
import { CertificateAuthority } from './authority.js';

export const CA_CERT_KEY = 'ca.crt';
export const CA_KEY_KEY = 'ca.key';

export interface CaSecretApi {
  /** The Secret's data (decoded), or undefined when it does not exist. */
  get(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /** Creates the Secret; 'exists' when another replica created it first. */
  create(namespace: string, name: string, data: Record<string, string>): Promise<'created' | 'exists'>;
}

/** A CA Secret that exists and cannot be used: the controller cannot serve the stream with it. */
export class UnusableCaError extends Error {}

export type CaOrigin = 'created' | 'existing';

export async function loadOrCreateCa(api: CaSecretApi, namespace: string, name: string, now = new Date()): Promise<{ ca: CertificateAuthority; origin: CaOrigin }> {
  const existing = await api.get(namespace, name);
  if (existing) return { ca: loadStored(existing, namespace, name, now), origin: 'existing' };
  const { ca, privateKeyPem } = CertificateAuthority.create(now);
  if ((await api.create(namespace, name, { [CA_CERT_KEY]: ca.certificate, [CA_KEY_KEY]: privateKeyPem })) === 'created') return { ca, origin: 'created' };
  const winner = await api.get(namespace, name);
  if (!winner) throw new Error(`Secret ${namespace}/${name} was created by another replica and is gone again; retrying`);
  return { ca: loadStored(winner, namespace, name, now), origin: 'existing' };
}

function loadStored(data: Record<string, string>, namespace: string, name: string, now: Date): CertificateAuthority {
  const fix = `delete it (kubectl -n ${namespace} delete secret ${name}) and restart the controller to have a new CA made and published to the proxies`;
  const cert = data[CA_CERT_KEY];
  const key = data[CA_KEY_KEY];
  if (!cert || !key) throw new UnusableCaError(`Secret ${namespace}/${name} has no ${!cert ? CA_CERT_KEY : CA_KEY_KEY}; ${fix}`);
  try {
    return CertificateAuthority.load(cert, key, now);
  } catch (err) {
    throw new UnusableCaError(`Secret ${namespace}/${name}: ${(err as Error).message}; ${fix}`);
  }
}

/** An API failure worth retrying (the API server away or busy), as opposed to a refusal. */
export function isTransient(err: unknown): boolean {
  if (err instanceof UnusableCaError) return false;
  const code = statusCode(err);
  return code === undefined || code === 429 || code >= 500;
}

export class KubeCaSecretApi implements CaSecretApi {
  readonly #api: CoreV1Api;
  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(CoreV1Api);
  }

  async get(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    try {
      const s = await this.#api.readNamespacedSecret({ name, namespace });
      return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }

  async create(namespace: string, name: string, data: Record<string, string>): Promise<'created' | 'exists'> {
    try {
      await this.#api.createNamespacedSecret({
        namespace,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'tollgate', 'app.kubernetes.io/component': 'snapshot-ca' } },
          type: 'Opaque',
          immutable: true,
          data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')])),
        },
      });
      return 'created';
    } catch (err) {
      if (statusCode(err) === 409) return 'exists';
      throw err;
    }
  }
}
