// The libraries only some configs need, loaded by the compile of the first config that names
// their feature instead of at start-up: a proxy whose config uses none of them never holds
// them (each is megabytes of heap and resident memory). The load is a synchronous require
// (CommonJS, or ES modules without top-level await), so a compile stays synchronous, a config
// whose library cannot be loaded is refused at load with TG_MODULE_UNAVAILABLE (never at its
// first request), and the request path only ever calls an accessor that has already loaded.
import { lazyModule } from '@tollgate/api';
import type * as Jose from 'jose';
import type Protobuf from 'protobufjs';
import type * as Undici from 'undici';
import { TollgateError } from './errors.js';

function featureModule<T>(specifier: string, feature: string): () => T {
  const load = lazyModule<T>(specifier, import.meta.url);
  return () => {
    try {
      return load();
    } catch (err) {
      throw new TollgateError('TG_MODULE_UNAVAILABLE', `${feature} needs the package ${specifier}, which cannot be loaded: ${(err as Error).message}`, { cause: err });
    }
  };
}

/** The messages of the gRPC services (extProc, ext_authz over gRPC, global rate limits), whose calls grpc/channel.ts makes over node:http2. */
export const protobufModule = featureModule<typeof Protobuf>('protobufjs', 'a gRPC service (extProc, ext_authz over gRPC, a global rate limit)');
/** JWT verification: jwt and oidc policies. */
export const joseModule = featureModule<typeof Jose>('jose', 'JWT verification (a jwt or oidc policy)');
/** The HTTP client that fetches JWKS and OIDC discovery documents. */
export const undiciModule = featureModule<typeof Undici>('undici', 'fetching keys (a jwt policy with remote JWKS, an oidc policy)');
