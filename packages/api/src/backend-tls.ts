// TLS to a backend, from either front end to BackendTLSIR: the standalone `tls` of a backend
// and, in the controller, a BackendTLSPolicy. What both share is here: the subject alternative
// names (checked and converted once), the CA bundle read through PolicySources and checked
// once, and the defaults.
import type { PolicySources } from './auth/sources.js';
import { caBundleProblem } from './certificate.js';
import type { SubjectAltNameConfig } from './schema/backend-tls.js';
import type { BackendTLSIR, CertificateIR, SubjectAltNameIR } from './snapshot.js';
import { joinPath, type Problem } from './validation-error.js';

export const DEFAULT_BACKEND_TLS_MIN_VERSION = 'TLSv1.2';

/** Each name has the field its type needs and not the other's (what the schema cannot say). */
export function checkSubjectAltNames(list: readonly SubjectAltNameConfig[] | undefined, at: string, out: Problem[]): void {
  (list ?? []).forEach((san, i) => {
    const p = joinPath(at, i);
    const [own, other] = san.type === 'Hostname' ? (['hostname', 'uri'] as const) : (['uri', 'hostname'] as const);
    if (san[own] === undefined) out.push({ path: joinPath(p, own), message: `required field is missing: type ${san.type} needs ${own}` });
    if (san[other] !== undefined) out.push({ path: joinPath(p, other), message: `is set on a name of type ${san.type}; remove it, or set type ${san.type === 'Hostname' ? 'URI' : 'Hostname'}` });
  });
}

/** The names of a checked list (checkSubjectAltNames). */
export function toSubjectAltNames(list: readonly SubjectAltNameConfig[] | undefined): SubjectAltNameIR[] {
  return (list ?? []).map((san) => (san.type === 'Hostname' ? { type: 'Hostname', hostname: san.hostname! } : { type: 'URI', uri: san.uri! }));
}

/**
 * A PEM CA bundle read through `sources` (a file standalone, a ConfigMap key in a cluster) and
 * checked; null with a problem at `at` when it cannot be used.
 */
export function readCaBundle(sources: PolicySources, at: string, ref: Parameters<PolicySources['text']>[1], problems: Problem[]): string | null {
  const r = sources.text(at, ref);
  if (!r.ok) {
    problems.push({ path: at, message: r.problem.message });
    return null;
  }
  const problem = caBundleProblem(r.value.text);
  if (problem) {
    problems.push({ path: at, message: `${r.value.origin} ${problem}` });
    return null;
  }
  return r.value.text;
}

export interface BackendTlsParts {
  readonly caCertificates: string | null;
  readonly hostname: string;
  readonly subjectAltNames?: readonly SubjectAltNameConfig[];
  readonly clientCertificate?: CertificateIR | null;
  readonly minVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** The IR, defaults applied. */
export function backendTlsIR(parts: BackendTlsParts): BackendTLSIR {
  return {
    caCertificates: parts.caCertificates,
    hostname: parts.hostname,
    subjectAltNames: toSubjectAltNames(parts.subjectAltNames),
    clientCertificate: parts.clientCertificate ?? null,
    minVersion: parts.minVersion ?? DEFAULT_BACKEND_TLS_MIN_VERSION,
  };
}
