// Gateway Programmed from the proxy pods and the snapshot stream's ACKs (deployer/programmed.ts)
// and how the status writer puts it on the Gateway and its listeners (status/programmed.ts).
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { programmed, type ProgrammedInput } from '../src/deployer/programmed.js';
import { withProgrammed } from '../src/status/programmed.js';
import type { GatewayStatusReport } from '../src/translate/types.js';

const pod = (name: string, o: { ready?: boolean; waiting?: { reason: string; message?: string }; deleting?: boolean } = {}): V1Pod => ({
  metadata: { name, namespace: 'apps', ...(o.deleting ? { deletionTimestamp: new Date('2026-01-01T00:00:00Z') } : {}) },
  status: {
    conditions: [{ type: 'Ready', status: o.ready ? 'True' : 'False' }],
    containerStatuses: [{ name: 'proxy', image: 'registry.example.com/tollgate:nope', imageID: '', ready: !!o.ready, restartCount: 0, ...(o.waiting ? { state: { waiting: o.waiting } } : { state: { running: {} } }) }],
  },
});

const base: ProgrammedInput = { deployment: 'edge-tollgate', replicas: 1, pods: [], version: 'v1', proxies: [] };

describe('programmed()', () => {
  it('is Pending until the pods are ready', () => {
    expect(programmed(base)).toEqual({ status: false, reason: 'Pending', message: '0 of 1 proxy pods of Deployment edge-tollgate ready' });
    expect(programmed({ ...base, replicas: 2, pods: [pod('a', { ready: true }), pod('b')] }).message).toBe('1 of 2 proxy pods of Deployment edge-tollgate ready');
    // A terminating pod does not count, ready or not.
    expect(programmed({ ...base, pods: [pod('a', { ready: true, deleting: true })] }).reason).toBe('Pending');
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

  it('is Pending while a connected proxy has not ACKed the current version', () => {
    const pods = [pod('a', { ready: true }), pod('b', { ready: true })];
    const v = programmed({ ...base, replicas: 2, pods, proxies: [{ pod: 'a', ackedVersion: 'v1' }, { pod: 'b', ackedVersion: 'v0' }] });
    expect(v).toEqual({ status: false, reason: 'Pending', message: 'proxy b has not applied snapshot v1 yet (serves v0)' });
    expect(programmed({ ...base, replicas: 2, pods, proxies: [{ pod: 'a', ackedVersion: null }, { pod: 'b', ackedVersion: 'v0' }] }).message).toBe('proxy a has not applied snapshot v1 yet (serves none) nor have 1 more');
    expect(programmed({ ...base, pods: [pod('a', { ready: true })], version: undefined }).message).toBe('no configuration snapshot for the Gateway yet');
  });

  it('is True when the pods are ready and every connected proxy ACKed the current version', () => {
    const v = programmed({ ...base, replicas: 2, pods: [pod('a', { ready: true }), pod('b', { ready: true })], proxies: [{ pod: 'a', ackedVersion: 'v1' }, { pod: 'b', ackedVersion: 'v1' }] });
    expect(v).toEqual({ status: true, reason: 'Programmed', message: '2 proxy pods ready; snapshot v1 applied' });
  });

  it('says no proxy runs with replicas 0', () => {
    expect(programmed({ ...base, replicas: 0 })).toMatchObject({ status: false, reason: 'NoResources' });
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
});
