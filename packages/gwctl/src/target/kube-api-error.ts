// A failed Kubernetes API request, as gwctl reports it: the API server's own reason (the
// `message` of its Status body) with the HTTP code, exit 4.
import { ApiException } from '@kubernetes/client-node';
import { GwctlError, describe } from '../errors.js';

/** The Status body of a refused request (`message`, `reason`, `details.name`), when it has one. */
export interface KubeStatus {
  readonly message?: string;
  readonly reason?: string;
  readonly details?: { readonly name?: string };
}

export function kubeStatus(err: ApiException<unknown>): KubeStatus {
  try {
    const body: unknown = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
    if (body && typeof body === 'object') return body;
  } catch {
    // body is not a Status
  }
  return {};
}

/** `cannot <what>: <the API server's reason> (HTTP <code>)`, or the transport error. */
export function kubeApiError(what: string, err: unknown): GwctlError {
  if (err instanceof ApiException) {
    const message = kubeStatus(err).message;
    const reason = typeof message === 'string' && message ? message : `HTTP ${err.code}`;
    return new GwctlError('TG_GWCTL_KUBE_API', `cannot ${what}: ${reason} (HTTP ${err.code})`, { cause: err });
  }
  return new GwctlError('TG_GWCTL_KUBE_API', `cannot ${what}: ${describe(err)}`, { cause: err });
}
