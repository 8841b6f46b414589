// ProxySnapshot: the intermediate representation the proxy runs on. The file loader builds
// it from a standalone config; the controller builds it from Gateway API resources. Both go
// through the same compile step in the proxy, so standalone mode is never a second code path.
//
// Everything here is normalised: defaults applied, names lower-cased where HTTP says they are
// case-insensitive, durations in milliseconds, and each variant a discriminated union so
// that, for instance, a tokens limit with a burst cannot be expressed.
import type { RateLimitUnit } from './schema/traffic-policy.js';
import type { Secret } from './secret.js';

export interface ProxySnapshot {
  /** Content hash of what produced the snapshot; changes whenever the config changes. */
  readonly version: string;
  readonly source: SnapshotSource;
  readonly binds: readonly BindIR[];
}

export type SnapshotSource =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'controller'; readonly gateway: string };

export interface BindIR {
  readonly port: number;
  readonly address: string;
  readonly listeners: readonly ListenerIR[];
}

export interface ListenerIR {
  readonly name: string;
  readonly protocol: 'HTTP';
  /** null: every host. */
  readonly hostname: string | null;
  /** Gateway-level policy, evaluated before routing. */
  readonly policy: PolicyIR | null;
  readonly routes: readonly RouteIR[];
}

export interface RouteIR {
  /** Identifier shown in traces and metrics, unique within the snapshot. */
  readonly name: string;
  /** Hostnames as configured (empty: every host of the listener). */
  readonly hostnames: readonly string[];
  readonly matches: readonly RouteMatchIR[];
  readonly filters: readonly FilterIR[];
  readonly policy: PolicyIR | null;
  readonly backends: readonly BackendIR[];
  readonly timeouts: { readonly requestMs: number | null; readonly backendRequestMs: number | null };
}

export type PathMatchIR =
  | { readonly type: 'Exact'; readonly value: string }
  | { readonly type: 'PathPrefix'; readonly value: string }
  | { readonly type: 'RegularExpression'; readonly value: string };

export interface ValueMatchIR {
  readonly type: 'Exact' | 'RegularExpression';
  /** Header names lower-cased; query parameter names as written. */
  readonly name: string;
  readonly value: string;
}

export interface RouteMatchIR {
  readonly path: PathMatchIR;
  readonly method: string | null;
  readonly headers: readonly ValueMatchIR[];
  readonly queryParams: readonly ValueMatchIR[];
}

export interface HeaderValueIR {
  /** Lower-cased. */
  readonly name: string;
  readonly value: string | Secret;
}

export interface HeaderModifierIR {
  readonly set: readonly HeaderValueIR[];
  readonly add: readonly HeaderValueIR[];
  readonly remove: readonly string[];
}

export type PathModifierIR =
  | { readonly type: 'ReplaceFullPath'; readonly value: string }
  | { readonly type: 'ReplacePrefixMatch'; readonly value: string };

export type FilterIR =
  | ({ readonly type: 'RequestHeaderModifier' } & HeaderModifierIR)
  | ({ readonly type: 'ResponseHeaderModifier' } & HeaderModifierIR)
  | {
      readonly type: 'RequestRedirect';
      readonly scheme: 'http' | 'https' | null;
      readonly hostname: string | null;
      readonly path: PathModifierIR | null;
      readonly port: number | null;
      readonly statusCode: 301 | 302 | 303 | 307 | 308;
    }
  | { readonly type: 'URLRewrite'; readonly hostname: string | null; readonly path: PathModifierIR | null };

export interface BackendIR {
  /** `<host>:<port>`. */
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly weight: number;
}

export type LocalRateLimitIR =
  | { readonly kind: 'requests'; readonly requests: number; readonly burst: number; readonly unit: RateLimitUnit }
  | { readonly kind: 'tokens'; readonly tokens: number; readonly unit: RateLimitUnit };

export interface RateLimitDescriptorIR {
  readonly entries: readonly { readonly name: string; readonly expression: string }[];
  readonly unit: 'Requests' | 'Tokens';
}

export interface GlobalRateLimitIR {
  /** `<host>:<port>` of the rate limit service. */
  readonly service: string;
  readonly domain: string;
  readonly descriptors: readonly RateLimitDescriptorIR[];
  readonly failureMode: 'FailOpen' | 'FailClosed';
  readonly timeoutMs: number;
}

/** Policies attached at one level. Keys follow the trace's effectivePolicy names. */
export interface PolicyIR {
  readonly localRateLimit: readonly LocalRateLimitIR[] | null;
  readonly remoteRateLimit: GlobalRateLimitIR | null;
}
