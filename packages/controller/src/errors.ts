// The controller's error catalog: the failures that stop `tollgate-controller` (exit 2 for a
// flag, environment or kubeconfig problem, 1 otherwise) and the ones it logs and goes on
// after (the `code` field of the log line). docs/errors.md lists them.
import { defineErrors } from '@tollgate/api';

export const CONTROLLER_ERRORS = defineErrors({
  usage: {
    code: 'TG_CONTROLLER_USAGE',
    message: '{problem}',
    hint: 'run tollgate-controller --help for the flags and their environment variables',
  },
  noCredentials: {
    code: 'TG_CONTROLLER_NO_CREDENTIALS',
    message: 'no Kubernetes credentials: not in a pod, and no kubeconfig given',
    hint: 'run in a pod (its ServiceAccount is used) or give --kubeconfig <file> (or KUBECONFIG)',
  },
  kubeconfig: {
    code: 'TG_CONTROLLER_KUBECONFIG',
    message: 'kubeconfig {path} {problem}',
    hint: 'give one readable kubeconfig file whose current context names a cluster',
  },
  bind: {
    code: 'TG_CONTROLLER_BIND',
    message: '{role} address {address} ({flag}) {problem}',
    hint: 'stop the other process on that port, or choose another address with the flag named',
  },
  watchFailed: {
    code: 'TG_CONTROLLER_WATCH_FAILED',
    message: 'list and watch of {kind} failed: {reason}; retrying with backoff',
    hint: 'check that the API server is reachable and that the ClusterRole lets the controller list and watch {kind}',
  },
  objectUnreadable: {
    code: 'TG_CONTROLLER_OBJECT_UNREADABLE',
    message: '{kind} {name} cannot be read: {reason}; it is skipped',
    hint: 'fix the object so it matches its CRD (it was stored under an older or looser schema); the controller reads it again when it changes',
  },
  translateFailed: {
    code: 'TG_CONTROLLER_TRANSLATE_FAILED',
    message: 'translation failed: {reason}; the last good snapshots and status stay',
    hint: 'a bug in the controller: report it with this log line (it carries the stack)',
  },
  snapshotRefused: {
    code: 'TG_CONTROLLER_SNAPSHOT_REFUSED',
    message: 'the new snapshot of Gateway {gateway} is invalid: {reason}; its last good snapshot stays',
    hint: 'a bug in the controller (translation produced a snapshot the proxies would refuse): report it with this log line',
  },
  statusWrite: {
    code: 'TG_CONTROLLER_STATUS_WRITE',
    message: 'status of {kind} {name} could not be written: {reason}',
    hint: 'check the API server message; a 403 means the ClusterRole lacks update on the status subresource; failed writes are tried again with a backoff from 500 ms doubling to 30 s',
  },
  leaseFailed: {
    code: 'TG_CONTROLLER_LEASE',
    message: 'leader election: the Lease request failed: {reason}',
    hint: 'check that the API server is reachable and that the Role in the release namespace allows get, create and update of leases',
  },
  eventFailed: {
    code: 'TG_CONTROLLER_EVENT',
    message: 'could not record the {reason} event on {object}: {detail}',
    hint: 'check that the ClusterRole allows create of events.k8s.io events',
  },
  proxySettings: {
    code: 'TG_CONTROLLER_PROXY_SETTINGS',
    message: 'Gateway {gateway}: {problem}',
    hint: 'fix the field named (docs/kubernetes.md lists the tollgate.dev/ settings); until then the default is used, or, for a name or port problem, the proxies or that port are left out',
  },
  proxyConflict: {
    code: 'TG_CONTROLLER_PROXY_CONFLICT',
    message: 'Gateway {gateway}: {problem}',
    hint: 'an object with the name of the Gateway\'s proxies (<gateway>-<class>) exists and is not Tollgate\'s for this Gateway, and Tollgate does not take over what it did not make: delete or rename that object, or rename the Gateway; the Gateway\'s Programmed condition names it, and the deployer checks again with a backoff up to 30 s',
  },
  addressRefused: {
    code: 'TG_CONTROLLER_ADDRESS_REFUSED',
    message: 'Gateway {gateway}: {problem}',
    hint: 'the API server refused the ClusterIP the Gateway asks for in spec.addresses (outside the cluster\'s Service ranges, already another Service\'s, or an IP family the cluster lacks): request a free address of one of its ranges (kubectl get servicecidrs) or remove it; the Gateway\'s Programmed condition says AddressNotUsable, and the deployer tries again with a backoff up to 30 s',
  },
  caConfigMapConflict: {
    code: 'TG_CONTROLLER_CA_CONFIGMAP_CONFLICT',
    message: 'ConfigMap {namespace}/tollgate-ca is not Tollgate\'s; left alone',
    hint: 'a tollgate-ca ConfigMap without the labels app.kubernetes.io/managed-by=tollgate and app.kubernetes.io/component=snapshot-ca exists in a namespace with Gateways; Tollgate does not overwrite it, so the proxies there cannot check the snapshot stream\'s certificate: delete it and Tollgate publishes its own (checked again with a backoff up to 30 s)',
  },
  deployFailed: {
    code: 'TG_CONTROLLER_DEPLOY',
    message: 'could not apply or delete the proxy {kind} {name}: {reason}',
    hint: 'check the API server message; a 403 means the ClusterRole lacks create, patch, list or delete on serviceaccounts, services or deployments; the next change retries',
  },
  streamCa: {
    code: 'TG_CONTROLLER_STREAM_CA',
    message: 'the snapshot stream has no CA: {reason}',
    hint: 'the controller keeps its CA in a Secret of its namespace (--snapshot-ca-secret): a 403 means the Role lacks get or create on that Secret; an unusable Secret is deleted to have a new CA made; --snapshot-plaintext serves without TLS, for development only',
  },
  streamRefused: {
    code: 'TG_CONTROLLER_STREAM_REFUSED',
    message: 'snapshot stream of {gateway} refused: {reason}',
    hint: 'UNAUTHENTICATED: the proxy sent no token, or one the API server refused, expired or not issued for audience tollgate (check the pod\'s projected token volume); PERMISSION_DENIED: the token belongs to another ServiceAccount than the Gateway\'s proxies (run the proxy as its Gateway\'s ServiceAccount); UNAVAILABLE: the TokenReview failed (a 403 means the ClusterRole lacks create on tokenreviews) or more new tokens came than --snapshot-token-reviews-per-second; "re-authentication refused": an open stream\'s ServiceAccount or token went away (the stream ends; the proxy reconnects with its current token); RESOURCE_EXHAUSTED: a bound was reached (--snapshot-max-streams, --snapshot-max-streams-per-gateway, --snapshot-max-message-bytes, messages sent ahead of the answers); INVALID_ARGUMENT: a hello field out of bounds',
  },
});

export type ControllerErrorCode = (typeof CONTROLLER_ERRORS)[keyof typeof CONTROLLER_ERRORS]['code'];
