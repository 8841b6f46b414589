// Where the credentials and keys a policy names come from. A policy kind never reads a file or
// a Kubernetes object itself: it asks its PolicySources, which the standalone loader implements
// over files (relative to the config file, bounded, watched for edits) and the controller over
// Secrets and ConfigMaps (the policy's namespace, or another one with a ReferenceGrant). So one
// conversion per kind (toApiKeyIR, toJwtIR, ...) serves both modes, and a bad source is a
// problem naming the field, whichever mode reads it.
import type { Problem } from '../validation-error.js';

/** A Secret or ConfigMap key (cluster), as written in a policy. */
export interface ObjectKeyRef {
  readonly kind?: 'Secret' | 'ConfigMap';
  readonly name: string;
  readonly namespace?: string;
  readonly key?: string;
}

/** One object's data: a Secret's (decoded) or ConfigMap's entries, or a file's text under `file`. */
export interface SourceObject {
  /** For messages and config dumps: `Secret <ns>/<name>`, `ConfigMap <ns>/<name>` or `file <path>`. */
  readonly origin: string;
  /** The object's name (a Secret's name; a file's base name). */
  readonly name: string;
  readonly data: Readonly<Record<string, string>>;
}

export type SourceResult<T> =
  | { readonly ok: true; readonly value: T }
  /** `reason` is the status reason a GatewayPolicy gets (e.g. InvalidSecretRef, RefNotPermitted). */
  | { readonly ok: false; readonly reason: string; readonly problem: Problem };

/** An outbound service a policy calls: a standalone `host`, or a cluster `backendRef`. */
export interface OutboundRef {
  readonly host?: string;
  readonly backendRef?: { readonly group?: string; readonly kind?: string; readonly name: string; readonly namespace?: string; readonly port: number };
}

export interface PolicySources {
  readonly mode: 'standalone' | 'cluster';
  /** The text of one file (standalone `file: <path>`) or of one key of a Secret or ConfigMap (cluster); `at` is the JSON path of the reference. */
  text(at: string, ref: { readonly file: string } | ObjectKeyRef): SourceResult<{ readonly origin: string; readonly text: string }>;
  /** Secrets named one by one or chosen by labels, in the policy's namespace or granted ones (cluster only). */
  secrets(at: string, refs: readonly { readonly name: string; readonly namespace?: string }[], selector: Readonly<Record<string, string>> | null): SourceResult<readonly SourceObject[]>;
  /** `<host>:<port>` to connect to; `role` names it in status messages (e.g. `JWKS server`). */
  outbound(at: string, ref: OutboundRef, role: string, failureMode: 'FailOpen' | 'FailClosed'): SourceResult<string>;
}

/** Sources for a config that names none (tests, and conversions that must not read anything). */
export const NO_SOURCES: PolicySources = {
  mode: 'standalone',
  text: (at) => ({ ok: false, reason: 'Invalid', problem: { path: at, message: 'no files can be read here' } }),
  secrets: (at) => ({ ok: false, reason: 'Invalid', problem: { path: at, message: 'Secrets are read in a cluster only; a standalone config names a file' } }),
  outbound: (at, ref) =>
    ref.host !== undefined ? { ok: true, value: ref.host } : { ok: false, reason: 'Invalid', problem: { path: at, message: 'a standalone proxy cannot resolve Services; use host: <host>:<port>' } },
};
