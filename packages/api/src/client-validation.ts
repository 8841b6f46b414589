// Client certificate validation of HTTPS listeners, from either front end to ClientValidationIR:
// a standalone listener's `tls.clientValidation` (a CA file) and, in the controller, the
// Gateway's `spec.tls.frontend` (ConfigMaps and Secrets with `ca.crt`). What both share is
// here: the modes, the bounds and the joining of the CA bundles into one.
import { MAX_CA_BUNDLE_BYTES } from './certificate.js';
import type { ClientValidationIR, ClientValidationMode } from './snapshot.js';

export const CLIENT_VALIDATION_MODES = ['AllowValidOnly', 'AllowInsecureFallback'] as const satisfies readonly ClientValidationMode[];
export const DEFAULT_CLIENT_VALIDATION_MODE: ClientValidationMode = 'AllowValidOnly';

/** Most CA references one validation names (the Gateway API's MaxItems of caCertificateRefs). */
export const MAX_CA_CERTIFICATE_REFS = 16;
/** Longest `origins` entry of the IR. */
export const MAX_CA_ORIGIN_LENGTH = 4400;

/** One checked CA bundle and where it came from. */
export interface CaBundle {
  readonly origin: string;
  readonly pem: string;
}

/**
 * The IR of a validation whose bundles were each checked (caBundleProblem): the bundles joined,
 * or why they cannot be used together (more bytes than one bundle may have).
 */
export function clientValidationIR(bundles: readonly CaBundle[], mode: ClientValidationMode): { readonly ok: true; readonly ir: ClientValidationIR } | { readonly ok: false; readonly problem: string } {
  const pem = bundles.map((b) => b.pem.trimEnd()).join('\n') + '\n';
  const bytes = Buffer.byteLength(pem);
  if (bytes > MAX_CA_BUNDLE_BYTES) {
    return { ok: false, problem: `the CA bundles together are ${bytes} bytes, more than the ${MAX_CA_BUNDLE_BYTES} one listener may trust; name fewer or smaller bundles` };
  }
  return { ok: true, ir: { caCertificates: pem, mode, origins: bundles.map((b) => b.origin) } };
}
