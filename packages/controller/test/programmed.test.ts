// Gateway Programmed from the proxy pods and the snapshot stream's ACKs and NACKs, and how the
// status writer puts it on the Gateway and its listeners (status/programmed.ts).
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { programmed, withProgrammed, withRejections, type ProgrammedInput } from '../src/status/programmed.js';
import type { GatewayStatusReport, StatusReport } from '../src/translate/types.js';

const pod = (name: string, o: { ready?: boolean; waiting?: { reason: string; message?: string }; deleting?: boolean } = {}): V1Pod => ({
  metadata: { name, namespace: 'apps', ...(o.deleting ? { deletionTimestamp: new Date('2026-01-01T00:00:00Z') } : {}) },
  status: {
    conditions: [{ type: 'Ready', status: o.ready ? 'True' : 'False' }],
    containerStatuses: [{ name: 'proxy', image: 'registry.example.com/tollgate:nope', imageID: '', ready: !!o.ready, restartCount: 0, ...(o.waiting ? { state: { waiting: o.waiting } } : { state: { running: {} } }) }],
  },
});

const base: ProgrammedInput = { deployment: 'edge-tollgate', replicas: 1, pods: [], version: 'v1', proxies: [] };

describe('programmed()', () => {
  it('is Pending until a proxy pod is ready', () => {
    expect(programmed(base)).toEqual({ status: false, reason: 'Pending', message: '0 of 1 proxy pods of Deployment edge-tollgate ready' });
    expect(programmed({ ...base, replicas: 2, pods: [pod('a'), pod('b')] }).message).toBe('0 of 2 proxy pods of Deployment edge-tollgate ready');
    // A terminating pod does not count, ready or not.
    expect(programmed({ ...base, pods: [pod('a', { ready: true, deleting: true })] }).reason).toBe('Pending');
    expect(programmed({ ...base, pods: [pod('a', { ready: true })], version: undefined }).message).toBe('no configuration snapshot for the Gateway yet');
  });

  it('is False while a requested address is not the Service’s, however many proxies serve', () => {
    const serving = { ...base, pods: [pod('a', { ready: true })], proxies: [{ pod: 'a', ackedVersion: 'v1' }] };
    expect(programmed(serving).status).toBe(true);
    const address = { reason: 'AddressNotUsable', message: 'spec.addresses 198.18.240.1: the cluster refused the address' } as const;
    expect(programmed({ ...serving, address })).toEqual({ status: false, ...address });
    // A name taken is said first: nothing of the Gateway is applied then.
    expect(programmed({ ...serving, address, blocked: 'Service apps/edge-tollgate exists' }).reason).toBe('NoResources');
  });

  it('stays True while a pod is replaced: the ready ones serve', () => {
    const v = programmed({ ...base, replicas: 2, pods: [pod('a', { ready: true }), pod('b'), pod('c', { ready: true, deleting: true })], proxies: [{ pod: 'a', ackedVersion: 'v1' }] });
    expect(v).toEqual({ status: true, reason: 'Programmed', message: '1 of 2 proxy pods ready; snapshot v1 applied' });
  });

  it('names the image and the kubelet message of a pod that cannot pull it', () => {
    const v = programmed({ ...base, pods: [pod('a', { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "registry.example.com/tollgate:nope"' } })] });
    expect(v).toEqual({
      status: false,
      reason: 'NoResources',
      message: 'proxy pod a cannot start: image "registry.example.com/tollgate:nope" cannot be pulled (ImagePullBackOff): Back-off pulling image "registry.example.com/tollgate:nope"',
    });
  });

  it('reports a stuck new pod even while an older pod still serves (a rollout that cannot finish)', () => {
    const v = programmed({ ...base, pods: [pod('old', { ready: true }), pod('new', { waiting: { reason: 'CrashLoopBackOff' } })] });
    expect(v).toMatchObject({ status: false, reason: 'NoResources', message: 'proxy pod new cannot start: container proxy cannot start (CrashLoopBackOff)' });
  });

  it('stays True while a newer snapshot reaches the proxies, and says how far it got', () => {
    const pods = [pod('a', { ready: true }), pod('b', { ready: true })];
    const v = programmed({ ...base, replicas: 2, pods, proxies: [{ pod: 'a', ackedVersion: 'v1' }, { pod: 'b', ackedVersion: 'v0' }] });
    expect(v).toEqual({ status: true, reason: 'Programmed', message: '2 proxy pods ready; snapshot v1 reaching the proxies: 1 of 2 applied it (b serves v0)' });
    expect(programmed({ ...base, replicas: 2, pods, proxies: [{ pod: 'a', ackedVersion: 'v0' }, { pod: 'b', ackedVersion: 'v0' }] }).message).toBe(
      '2 proxy pods ready; snapshot v1 reaching the proxies: 0 of 2 applied it (a serves v0)',
    );
  });

  it('each version in turn: Pending before the first proxy serves, then True throughout', () => {
    const steps: [ProgrammedInput['pods'], string, ProgrammedInput['proxies']][] = [
      [[pod('a')], 'v1', [{ pod: 'a', ackedVersion: null }]],
      [[pod('a', { ready: true })], 'v1', [{ pod: 'a', ackedVersion: 'v1' }]],
      [[pod('a', { ready: true })], 'v2', [{ pod: 'a', ackedVersion: 'v1' }]],
      [[pod('a', { ready: true })], 'v2', [{ pod: 'a', ackedVersion: 'v2' }]],
      [[pod('a', { ready: true })], 'v3', [{ pod: 'a', ackedVersion: 'v2' }]],
    ];
    expect(steps.map(([pods, version, proxies]) => programmed({ ...base, pods, version, proxies }).reason)).toEqual(['Pending', 'Programmed', 'Programmed', 'Programmed', 'Programmed']);
  });

  it('counts readiness of proxies connected to another controller replica (none seen here)', () => {
    expect(programmed({ ...base, pods: [pod('a', { ready: true })], proxies: [] })).toEqual({ status: true, reason: 'Programmed', message: '1 proxy pod ready; snapshot v1 applied' });
  });

  it('is True when the pods are ready and every connected proxy ACKed the current version', () => {
    const v = programmed({ ...base, replicas: 2, pods: [pod('a', { ready: true }), pod('b', { ready: true })], proxies: [{ pod: 'a', ackedVersion: 'v1' }, { pod: 'b', ackedVersion: 'v1' }] });
    expect(v).toEqual({ status: true, reason: 'Programmed', message: '2 proxy pods ready; snapshot v1 applied' });
  });

  it('says no proxy runs with replicas 0', () => {
    expect(programmed({ ...base, replicas: 0 })).toEqual({ status: false, reason: 'NoResources', message: 'Deployment edge-tollgate runs no proxy (replicas 0): set tollgate.dev/replicas above 0' });
    expect(programmed({ ...base, replicas: 0, replicasHint: 'set replicas in ConfigMap apps/edge-proxy above 0' }).message).toBe('Deployment edge-tollgate runs no proxy (replicas 0): set replicas in ConfigMap apps/edge-proxy above 0');
  });
});

describe('withProgrammed()', () => {
  const c = (type: string, status: 'True' | 'False', reason: string) => ({ type, status, reason, message: 'm', observedGeneration: 2 });
  const report: GatewayStatusReport = {
    namespace: 'apps',
    name: 'edge',
    generation: 2,
    conditions: [c('Accepted', 'True', 'Accepted'), c('Programmed', 'False', 'Pending')],
    listeners: [
      { name: 'ok', supportedKinds: [], attachedRoutes: 1, conditions: [c('Accepted', 'True', 'Accepted'), c('Programmed', 'False', 'Pending')] },
      { name: 'bad', supportedKinds: [], attachedRoutes: 0, conditions: [c('Accepted', 'False', 'UnsupportedProtocol'), c('Programmed', 'False', 'Invalid')] },
    ],
  };

  it('replaces Pending on the Gateway and its live listeners, never Invalid', () => {
    const out = withProgrammed(report, { status: true, reason: 'Programmed', message: '1 proxy pod ready; snapshot v1 applied' });
    expect(out.conditions[1]).toEqual({ type: 'Programmed', status: 'True', reason: 'Programmed', message: '1 proxy pod ready; snapshot v1 applied', observedGeneration: 2 });
    expect(out.listeners[0]!.conditions[1]).toMatchObject({ status: 'True', reason: 'Programmed' });
    expect(out.listeners[1]!.conditions[1]).toEqual(c('Programmed', 'False', 'Invalid'));
    expect(withProgrammed(report, undefined)).toBe(report);
  });

  it('a refused snapshot (NACK) is Programmed False Invalid even while the pods serve; the next ACKed version is True again, never Pending', () => {
    const status = (gateways: GatewayStatusReport[]): StatusReport => ({ gatewayClasses: new Map(), gateways: new Map(gateways.map((g) => [`${g.namespace}/${g.name}`, g])), httpRoutes: new Map(), gatewayPolicies: new Map(), backendTLSPolicies: new Map() });
    const pods = [pod('a', { ready: true })];
    const serving = programmed({ ...base, pods, version: 'v2', proxies: [{ pod: 'a', ackedVersion: 'v1' }] });
    const refused = withRejections(status([report]), () => ({ version: 'v2', pod: 'a', error: 'listener http: port 80 is already in use' })).gateways.get('apps/edge')!;
    expect(withProgrammed(refused, serving).conditions[1]).toEqual({ type: 'Programmed', status: 'False', reason: 'Invalid', message: 'proxy a refused snapshot v2: listener http: port 80 is already in use', observedGeneration: 2 });
    const fixed = withRejections(status([report]), () => undefined).gateways.get('apps/edge')!;
    expect(withProgrammed(fixed, programmed({ ...base, pods, version: 'v3', proxies: [{ pod: 'a', ackedVersion: 'v3' }] })).conditions[1]).toMatchObject({ status: 'True', reason: 'Programmed', message: '1 proxy pod ready; snapshot v3 applied' });
  });
});
