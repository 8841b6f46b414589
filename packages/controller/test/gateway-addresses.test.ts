// What a Gateway's spec.addresses decide of its Programmed condition, from the Service the
// deployer made (deployer/addresses.ts): the refusals themselves come from the real API server
// (e2e/gateway-addresses.test.ts); here, the reading of the Service and of spec.addresses.
import type { KubernetesObject, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { addressVerdict, gatewayAddresses } from '../src/deployer/addresses.js';
import type { Gateway, GatewaySpecAddress } from '../src/types/gateway-api.js';

const gateway = (addresses?: GatewaySpecAddress[]): Gateway => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'edge', namespace: 'apps', uid: 'u1' },
  spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }], ...(addresses ? { addresses } : {}) },
});

const service = (clusterIPs: string[], managedBy = 'tollgate'): V1Service => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'edge-tollgate', namespace: 'apps', labels: { 'app.kubernetes.io/managed-by': managedBy } },
  spec: { clusterIP: clusterIPs[0], clusterIPs },
});

const lookup = (svc: V1Service | undefined) => (name: string, namespace: string): KubernetesObject | undefined => (svc && name === svc.metadata!.name && namespace === svc.metadata!.namespace ? svc : undefined);

describe('the addresses a Gateway asks for, against its Service', () => {
  it('decide nothing when none are asked for, or only the cluster’s choice', () => {
    expect(addressVerdict(gateway(), lookup(undefined), undefined)).toBeUndefined();
    expect(addressVerdict(gateway([{ type: 'IPAddress' }]), lookup(service(['198.19.4.4'])), undefined)).toBeUndefined();
  });

  it('are programmed once every one is on the Service (IPv6 compared in canonical form)', () => {
    const g = gateway([{ value: '198.51.100.10' }, { value: '2001:DB8:0::10' }]);
    expect(addressVerdict(g, lookup(service(['198.51.100.10', '2001:db8::10'])), undefined)).toBeUndefined();
    expect(gatewayAddresses(g, lookup(service(['198.51.100.10', '2001:db8::10'])))).toEqual([
      { type: 'IPAddress', value: '198.51.100.10' },
      { type: 'IPAddress', value: '2001:db8::10' },
    ]);
  });

  it('are not assigned while the Service is missing or still has another address', () => {
    const g = gateway([{ value: '198.51.100.10' }]);
    expect(addressVerdict(g, lookup(undefined), undefined)).toEqual({ reason: 'AddressNotAssigned', message: 'spec.addresses 198.51.100.10 not assigned yet: Service apps/edge-tollgate is not created yet' });
    expect(addressVerdict(g, lookup(service(['198.19.4.4'])), undefined)).toEqual({
      reason: 'AddressNotAssigned',
      message: 'spec.addresses 198.51.100.10 not assigned yet: Service apps/edge-tollgate has 198.19.4.4 and is being replaced',
    });
    // Someone else's Service of the name is no address of the Gateway's.
    expect(addressVerdict(g, lookup(service(['198.51.100.10'], 'someone')), undefined)?.reason).toBe('AddressNotAssigned');
    expect(gatewayAddresses(g, lookup(service(['198.51.100.10'], 'someone')))).toEqual([]);
  });

  it('are not usable when refused, or beyond one per family, even with the Service in place', () => {
    const g = gateway([{ value: '198.51.100.10' }, { value: '198.51.100.11' }]);
    expect(addressVerdict(g, lookup(service(['198.51.100.10'])), undefined)).toEqual({
      reason: 'AddressNotUsable',
      message: "spec.addresses[1] 198.51.100.11: the Gateway's Service takes one IPv4 address, 198.51.100.10 (spec.addresses[0]); remove one of them",
    });
    const refusal = { clusterIPs: ['198.51.100.10'], message: 'refused' };
    expect(addressVerdict(gateway([{ value: '198.51.100.10' }]), lookup(undefined), refusal)).toEqual({ reason: 'AddressNotUsable', message: 'refused' });
    // A refusal of addresses the Gateway no longer asks for is over: the deployer has yet to try the new ones.
    expect(addressVerdict(gateway([{ value: '198.51.100.12' }]), lookup(undefined), refusal)?.reason).toBe('AddressNotAssigned');
  });
});
