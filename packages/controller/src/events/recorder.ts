// Kubernetes Events (events.k8s.io/v1) the controller records, so `kubectl describe` and
// `kubectl get events` show what it did: leadership changes on the Lease, objects it skipped
// because it cannot read them. Only the leader records (Events are writes). The same event
// for the same object version is recorded once.
import { EventsV1Api, V1MicroTime, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTROLLER_ERRORS } from '../errors.js';
import { describeApiError } from '../kube/errors.js';

export interface EventSink {
  record(regarding: KubernetesObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): void;
}

const MAX_REMEMBERED = 10_000;

export class EventRecorder implements EventSink {
  readonly #api: EventsV1Api;
  readonly #seen = new Set<string>();

  constructor(
    kc: KubeConfig,
    private readonly controller: string,
    private readonly instance: string,
    private readonly isLeader: () => boolean,
    private readonly log: Logger,
  ) {
    this.#api = kc.makeApiClient(EventsV1Api);
  }

  record(regarding: KubernetesObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): void {
    const m = regarding.metadata;
    if (!m?.name || !this.isLeader()) return;
    const key = `${m.uid ?? ''}/${m.resourceVersion ?? ''}/${reason}/${note}`;
    if (this.#seen.has(key)) return;
    if (this.#seen.size >= MAX_REMEMBERED) this.#seen.clear();
    this.#seen.add(key);
    const namespace = m.namespace || 'default';
    const [group, version] = (regarding.apiVersion ?? 'v1').includes('/') ? regarding.apiVersion!.split('/') : ['', regarding.apiVersion ?? 'v1'];
    this.#api
      .createNamespacedEvent({
        namespace,
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { name: `${m.name}.${Date.now().toString(16)}${Math.floor(Math.random() * 0xfff).toString(16)}`, namespace },
          eventTime: new V1MicroTime(),
          type,
          reason,
          action,
          note: note.slice(0, 1024),
          reportingController: this.controller,
          reportingInstance: this.instance.slice(0, 128),
          regarding: { apiVersion: group ? `${group}/${version}` : version, kind: regarding.kind, name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
        },
      })
      .catch((err: unknown) => this.log.warn({ code: CONTROLLER_ERRORS.eventFailed.code, reason, object: `${m.namespace ?? ''}/${m.name}`, err: describeApiError(err) }, 'could not record event'));
  }
}
