// What a proxy may say in its hello. Every field is chosen by whoever opens a stream, and each
// ends up somewhere that lasts: the Gateway and the version are metric labels, the pod and its
// namespace are in the admin API, the logs and the Gateway's status. So each has the shape and
// the length of what it names (Kubernetes object names, the controller's snapshot versions),
// and a hello that breaks one is refused naming the field and the bound, quoting at most the
// first characters of what was sent.
import type { Hello } from '@tollgate/api/snapshot-stream';
import { clip } from './clip.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** The controller's versions are 12 hex digits; any version a proxy holds came from it. */
const VERSION = /^[A-Za-z0-9._-]*$/;

export const HELLO_LIMITS = {
  /** A namespace (DNS label). */
  namespace: 63,
  /** An object name (DNS subdomain): a Gateway's, a pod's. */
  name: 253,
  version: 64,
} as const;

/** Why the hello is refused (naming the field), or undefined when every field is in bounds. */
export function helloProblem(h: Hello): string | undefined {
  const slash = h.gateway.indexOf('/');
  const ns = h.gateway.slice(0, slash);
  const name = h.gateway.slice(slash + 1);
  if (slash < 0 || ns.length > HELLO_LIMITS.namespace || !DNS_LABEL.test(ns) || name.length > HELLO_LIMITS.name || !DNS_SUBDOMAIN.test(name)) {
    return `hello.gateway ${JSON.stringify(clip(h.gateway))} is not <namespace>/<name> (a namespace of at most ${HELLO_LIMITS.namespace} and a name of at most ${HELLO_LIMITS.name} lower-case letters, digits, '-' and '.')`;
  }
  if (h.pod !== '' && (h.pod.length > HELLO_LIMITS.name || !DNS_SUBDOMAIN.test(h.pod))) {
    return `hello.pod ${JSON.stringify(clip(h.pod))} is not a pod name (at most ${HELLO_LIMITS.name} lower-case letters, digits, '-' and '.')`;
  }
  if (h.podNamespace !== '' && (h.podNamespace.length > HELLO_LIMITS.namespace || !DNS_LABEL.test(h.podNamespace))) {
    return `hello.podNamespace ${JSON.stringify(clip(h.podNamespace))} is not a namespace (at most ${HELLO_LIMITS.namespace} lower-case letters, digits and '-')`;
  }
  if (h.version.length > HELLO_LIMITS.version || !VERSION.test(h.version)) {
    return `hello.version ${JSON.stringify(clip(h.version))} is not a snapshot version (at most ${HELLO_LIMITS.version} letters, digits, '.', '_' and '-'; empty when the proxy serves nothing)`;
  }
  return undefined;
}
