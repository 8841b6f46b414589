// The pure and near-pure parts of the stream's trust: the serving certificate's names, the
// tollgate-ca ConfigMaps, and the CA Secret's life (made once, reused, never replaced when
// unusable), with an in-memory Secret store standing in for the API server. On the real one:
// e2e/snapshot-stream.test.ts; the publisher's retries and the race to create the Secret (a
// 409 from the API server) in e2e/controller-api-faults.test.ts.
import { describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../src/pki/authority.js';
import { renderCaConfigMaps } from '../src/pki/ca-configmap.js';
import { CaPublisher, type ConfigMapApi } from '../src/pki/ca-publisher.js';
import { isTransient, loadOrCreateCa, UnusableCaError, type CaSecretApi } from '../src/pki/ca-secret.js';
import { servingNames } from '../src/pki/names.js';
import type { Gateway } from '../src/types/gateway-api.js';
import pino from 'pino';
import type { KubernetesObject } from '@kubernetes/client-node';

const gw = (namespace: string, name: string): Gateway =>
  ({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name, namespace, uid: `uid-${namespace}-${name}` }, spec: { gatewayClassName: 'tollgate', listeners: [] } }) as unknown as Gateway;

describe('serving certificate names', () => {
  it('covers every form of the Service name, and the extra names', () => {
    expect(servingNames('tollgate-controller.tollgate-system.svc', ['tollgate.example.com', '198.18.0.10'])).toEqual({
      dnsNames: ['tollgate-controller.tollgate-system.svc', 'tollgate-controller.tollgate-system.svc.cluster.local', 'tollgate-controller.tollgate-system', 'tollgate-controller', 'tollgate.example.com'],
      ipAddresses: ['198.18.0.10'],
    });
    expect(servingNames('tg.ops.svc.corp.internal').dnsNames).toEqual(['tg.ops.svc.corp.internal', 'tg.ops.svc', 'tg.ops.svc.cluster.local', 'tg.ops', 'tg']);
    expect(servingNames('controller.example.com')).toEqual({ dnsNames: ['controller.example.com'], ipAddresses: [] });
  });
});

describe('tollgate-ca ConfigMaps', () => {
  it('one per namespace with a Gateway, the certificate only, owned by each Gateway there', () => {
    const cms = renderCaConfigMaps([gw('b', 'z'), gw('a', 'one'), gw('b', 'y')], 'PEM');
    expect(cms.map((c) => [c.metadata!.namespace, c.metadata!.name, c.data, c.metadata!.ownerReferences!.map((o) => o.name)])).toEqual([
      ['a', 'tollgate-ca', { 'ca.crt': 'PEM' }, ['one']],
      ['b', 'tollgate-ca', { 'ca.crt': 'PEM' }, ['y', 'z']],
    ]);
    // Owners, not controllers: several Gateways share the ConfigMap.
    expect(cms[1]!.metadata!.ownerReferences![0]).toEqual({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', name: 'y', uid: 'uid-b-y' });
  });

  it('the publisher applies each once, and again when it changes', async () => {
    const applied: string[] = [];
    let done: () => void = () => undefined;
    const api: ConfigMapApi = {
      apply: async (o: KubernetesObject) => {
        applied.push(`${o.metadata!.namespace}:${(o as { metadata: { ownerReferences: { name: string }[] } }).metadata.ownerReferences.map((r) => r.name).join(',')}`);
        done();
      },
      labels: async () => undefined,
    };
    const p = new CaPublisher({ api, log: pino({ level: 'silent' }), retry: { initialMs: 1, maxMs: 1 } });
    const next = (n: number) => new Promise<void>((resolve) => (done = () => applied.length >= n && resolve()));
    await p.start();
    p.submit([gw('a', 'one'), gw('b', 'y')]);
    let wait = next(2);
    p.setCertificate('PEM');
    await wait;
    expect(applied).toEqual(['a:one', 'b:y']);
    // Only the namespace whose ConfigMap changed (a second owner) is applied again.
    wait = next(3);
    p.submit([gw('a', 'one'), gw('b', 'y'), gw('b', 'z')]);
    await wait;
    expect(applied).toEqual(['a:one', 'b:y', 'b:y,z']);
    await p.stop();
  });
});

/** An in-memory Secret store. */
class MemorySecrets implements CaSecretApi {
  readonly store = new Map<string, Record<string, string>>();
  creates = 0;
  async get(namespace: string, name: string) {
    return this.store.get(`${namespace}/${name}`);
  }
  async create(namespace: string, name: string, data: Record<string, string>) {
    if (this.store.has(`${namespace}/${name}`)) return 'exists' as const;
    this.creates++;
    this.store.set(`${namespace}/${name}`, data);
    return 'created' as const;
  }
}

describe('the CA Secret', () => {
  it('is made once and reused after', async () => {
    const api = new MemorySecrets();
    const first = await loadOrCreateCa(api, 'tollgate-system', 'tollgate-ca');
    expect(first.origin).toBe('created');
    expect(Object.keys(api.store.get('tollgate-system/tollgate-ca')!).sort()).toEqual(['ca.crt', 'ca.key']);
    const again = await loadOrCreateCa(api, 'tollgate-system', 'tollgate-ca');
    expect(again.origin).toBe('existing');
    expect(again.ca.x509.fingerprint256).toBe(first.ca.x509.fingerprint256);
    expect(api.creates).toBe(1);
  });

  it('an unusable Secret is never replaced: the error names it and the fix', async () => {
    const api = new MemorySecrets();
    const other = CertificateAuthority.create();
    api.store.set('ns/ca', { 'ca.crt': CertificateAuthority.create().ca.certificate, 'ca.key': other.privateKeyPem });
    const err = await loadOrCreateCa(api, 'ns', 'ca').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnusableCaError);
    expect((err as Error).message).toBe('Secret ns/ca: ca.key is not the private key of ca.crt; delete it (kubectl -n ns delete secret ca) and restart the controller to have a new CA made and published to the proxies');
    expect(isTransient(err)).toBe(false);
    api.store.set('ns/ca', { 'ca.crt': other.ca.certificate });
    await expect(loadOrCreateCa(api, 'ns', 'ca')).rejects.toThrow('Secret ns/ca has no ca.key;');
    expect(api.creates).toBe(0);
  });

  it('tells transient API failures from refusals', () => {
    expect(isTransient(Object.assign(new Error('x'), { code: 503 }))).toBe(true);
    expect(isTransient(new Error('ECONNREFUSED'))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { code: 403 }))).toBe(false);
  });
});
