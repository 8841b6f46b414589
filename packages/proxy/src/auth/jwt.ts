// jwt: the caller presents a JSON Web Token that one of the policy's providers signed. The
// token is read from the one place (of the providers' tokenFrom) that holds one, as every kind
// reads its credential (credential-reader.ts); when several providers read that place, the
// token's `iss` picks the provider. Its header must name an accepted asymmetric algorithm
// (never `none`, never HS*) that fits the key its `kid` names; jose checks the signature,
// then iss, aud, exp and nbf within the clock skew.
// Every refusal is a 401 with a Bearer challenge and a reason from a fixed set, whose text
// never quotes the token; only "the keys could not be fetched" is a 503.
import { JWT_ALGORITHMS, isJwtAlgorithm, keyFits, locationKey, type JwtAlgorithm, type JwtIR, type JwtProviderIR, type TokenLocationIR, type VerificationKey } from '@tollgate/api';
import type { JWTPayload, jwtVerify } from 'jose';
import { joseModule } from '../feature-module.js';
import { ERRORS } from '../errors.js';
import { boundedClaims, consumerOf, headerValue } from './jwt-claims.js';
import { keySetOf, type KeySet } from './jwt-keys.js';
import { describeLocation, headerNames, readCredential, type CredentialStrip } from './credential-reader.js';
import { MIN_REFRESH_INTERVAL_MS, RemoteJwks, type JwksStore } from './jwks-store.js';
import type { AuthCheck, AuthDenial, AuthPass, AuthReason, AuthRequest, AuthVerdict } from './types.js';

/** Why a token was refused: the `reason` label of tollgate_auth_decisions_total{kind="jwt"}. */
export type JwtReason = Extract<AuthReason, 'missing' | 'ambiguous' | 'malformed' | 'expired' | 'not_yet_valid' | 'bad_signature' | 'bad_issuer' | 'bad_audience' | 'unknown_key' | 'bad_algorithm' | 'keys_unavailable'>;

/** Keys a token without `kid` is tried against (those fitting its alg, in the set's order). */
export const MAX_KEYS_TRIED = 8;

/**
 * Tokens whose signature was verified, kept per policy so that a client sending the same token
 * again costs a lookup instead of a signature check (an RS256 verification is most of the
 * price of a jwt check). Bounded in count, and only tokens up to this length are kept.
 */
export const MAX_VERIFIED_TOKENS = 4096;
export const MAX_CACHED_TOKEN_LENGTH = 4096;

/** A verified token: its claims, who verified it and with which key, and when it stops being valid. */
interface Verified {
  readonly provider: Provider;
  readonly kid: string | undefined;
  readonly key: VerificationKey;
  readonly payload: JWTPayload;
  /** exp plus the clock skew, in ms. */
  readonly notAfterMs: number;
  /** nbf minus the clock skew, in ms (-Infinity without nbf). */
  readonly notBeforeMs: number;
}

interface Provider {
  readonly ir: JwtProviderIR;
  readonly keys: KeySet | RemoteJwks;
}

/** A place tokens are read from, and the providers reading it. */
interface Place {
  readonly loc: TokenLocationIR;
  readonly providers: readonly Provider[];
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/** `deps` is the part of AuthDeps it uses (compilers.ts passes the whole). */
export function compileJwt(ir: JwtIR, deps: { readonly jwks: JwksStore; readonly clock: () => number }): AuthCheck {
  const providers: Provider[] = ir.providers.map((p) => {
    if (p.keys.kind === 'static') return { ir: p, keys: keySetOf(p.keys.jwks, 'strict') };
    const remote = deps.jwks.get(p.keys);
    remote.prefetch();
    return { ir: p, keys: remote };
  });
  const places = new Map<string, { loc: TokenLocationIR; providers: Provider[] }>();
  for (const p of providers) {
    for (const loc of p.ir.tokenFrom) {
      const key = locationKey(loc);
      const place = places.get(key) ?? { loc, providers: [] };
      place.providers.push(p);
      places.set(key, place);
    }
  }
  // jose is loaded by the compile (feature-module.ts): a config it cannot be loaded for is refused.
  const check = new JwtCheck(ir, [...places.values()], deps.clock, joseModule().jwtVerify);
  return { kind: 'jwt', needsBody: false, run: (req) => check.run(req) };
}

class JwtCheck {
  /** Every header a provider copies a claim to: a client's own is never forwarded. */
  readonly #claimHeaders: readonly string[];
  readonly #locations: readonly TokenLocationIR[];
  readonly #names: ReadonlySet<string>;
  /** Each place by the name the reader gives it. */
  readonly #byWhere: ReadonlyMap<string, Place>;
  readonly #missing: AuthDenial;
  /** By token text, least recently used first. */
  readonly #verified = new Map<string, Verified>();

  constructor(
    readonly ir: JwtIR,
    places: readonly Place[],
    readonly clock: () => number,
    readonly verify: typeof jwtVerify,
  ) {
    this.#claimHeaders = [...new Set(ir.providers.flatMap((p) => p.claimsToHeaders.map((c) => c.header)))];
    this.#locations = places.map((p) => p.loc);
    this.#names = headerNames(this.#locations);
    this.#byWhere = new Map(places.map((p) => [describeLocation(p.loc), p]));
    this.#missing = deny('missing', `no token; send it in one of: ${this.#locations.map(describeLocation).join(', ')}`);
  }

  run(req: AuthRequest): AuthVerdict | Promise<AuthVerdict> {
    const read = readCredential(req, this.#locations, this.#names);
    if (read.found === 'refused') return deny(read.reason, read.detail, 'invalid_request');
    if (read.found === 'one') return this.#verify(this.#byWhere.get(read.where)!, read.value, read.strip).catch(() => deny('malformed', 'the token could not be read'));
    if (this.ir.mode === 'Optional') return this.#claimHeaders.length ? { ok: true, removeHeaders: this.#claimHeaders, note: 'no token' } : { ok: true, note: 'no token' };
    return this.#missing;
  }

  async #verify(place: Place, token: string, removal: CredentialStrip): Promise<AuthVerdict> {
    if (token.length > this.ir.maxTokenLength) return deny('malformed', `the token is longer than ${this.ir.maxTokenLength} characters (jwt.maxTokenLength)`);
    const known = this.#verified.get(token);
    if (known) {
      this.#verified.delete(token);
      // Still within its lifetime, read from a place of its provider, and its key still in the
      // provider's set (a remote set fetched again makes new keys): otherwise verified again,
      // which gives the refusal its reason.
      const now = this.clock();
      if (now <= known.notAfterMs && now >= known.notBeforeMs && place.providers.includes(known.provider) && (await this.#holds(known))) {
        this.#verified.set(token, known);
        return this.#pass(known.provider.ir, known.payload, removal);
      }
    }
    const parts = token.split('.');
    if (parts.length === 5) return deny('malformed', 'encrypted tokens (JWE) are not accepted; send a signed JWT');
    if (parts.length !== 3 || !parts.every((p) => B64URL.test(p)) || !parts[0] || !parts[1]) return deny('malformed', 'the token is not a JWT (three base64url parts separated by dots)');
    const header = decodeJson(parts[0]);
    if (header === null) return deny('malformed', 'the token\'s header is not a JSON object');
    const { alg, kid } = header;
    if (!isJwtAlgorithm(alg)) return deny('bad_algorithm', `the token's alg is not accepted; accepted: ${JWT_ALGORITHMS.join(', ')}`);
    if (kid !== undefined && typeof kid !== 'string') return deny('malformed', 'the token\'s kid is not a string');
    const provider = this.#provider(place, parts[1]);
    if (!provider) return deny('bad_issuer', `the token's iss is the issuer of none of the providers reading ${describeLocation(place.loc)}`);
    const keys = await this.#candidates(provider, kid);
    if (typeof keys === 'string') return keys === 'keys_unavailable' ? unavailable(provider) : deny('unknown_key', `the token's kid names no key of provider ${provider.ir.name}`);
    const fitting = keys.filter((k) => keyFits(k, alg));
    if (!fitting.length) return deny('bad_algorithm', `the token's alg does not fit the type of the key ${kid === undefined ? 'set' : 'its kid names'}`);
    let last: AuthDenial | null = null;
    for (const key of fitting.slice(0, MAX_KEYS_TRIED)) {
      try {
        const { payload } = await this.verify(token, key.jwk, this.#options(provider.ir, alg));
        const verdict = this.#pass(provider.ir, payload, removal);
        if (verdict.ok) this.#remember(token, { provider, kid, key, payload, notAfterMs: (payload.exp ?? 0) * 1000 + provider.ir.clockSkewMs, notBeforeMs: payload.nbf === undefined ? -Infinity : payload.nbf * 1000 - provider.ir.clockSkewMs });
        return verdict;
      } catch (err) {
        last = refusal(err);
        // Without a kid the next key may be the one: only a signature mismatch moves on.
        if (last.reason !== 'bad_signature') return last;
      }
    }
    return last!;
  }

  #remember(token: string, v: Verified): void {
    if (token.length > MAX_CACHED_TOKEN_LENGTH) return;
    this.#verified.set(token, v);
    if (this.#verified.size > MAX_VERIFIED_TOKENS) this.#verified.delete(this.#verified.keys().next().value!);
  }

  /** Whether the key that verified a token is still one its provider's set offers for the token's kid. */
  async #holds(v: Verified): Promise<boolean> {
    const keys = v.provider.keys;
    const set = keys instanceof RemoteJwks ? await keys.keys() : keys;
    return set !== null && set.candidates(v.kid).includes(v.key);
  }

  /** The only provider of the place, or the one whose issuer is the token's (unverified) iss. */
  #provider(place: Place, payloadPart: string): Provider | null {
    if (place.providers.length === 1) return place.providers[0]!;
    const iss = decodeJson(payloadPart)?.iss;
    return place.providers.find((p) => p.ir.issuer === iss) ?? null;
  }

  /** The keys the token's kid names (all when it names none), fetching a remote set again for an unknown kid. */
  async #candidates(provider: Provider, kid: string | undefined): Promise<readonly VerificationKey[] | 'keys_unavailable' | 'unknown_key'> {
    const remote = provider.keys;
    if (!(remote instanceof RemoteJwks)) {
      const found = remote.candidates(kid);
      return found.length ? found : 'unknown_key';
    }
    let set = await remote.keys();
    if (!set) return 'keys_unavailable';
    let found = set.candidates(kid);
    if (!found.length && kid !== undefined && (await remote.refreshForUnknownKid())) {
      set = await remote.keys();
      found = set?.candidates(kid) ?? [];
    }
    return found.length ? found : 'unknown_key';
  }

  #options(p: JwtProviderIR, alg: JwtAlgorithm) {
    return {
      algorithms: [alg],
      issuer: p.issuer ?? undefined,
      audience: p.audiences.length ? [...p.audiences] : undefined,
      clockTolerance: p.clockSkewMs / 1000,
      currentDate: new Date(this.clock()),
      requiredClaims: ['exp'],
    };
  }

  #pass(p: JwtProviderIR, payload: JWTPayload, removal: CredentialStrip): AuthVerdict {
    const { claims, dropped } = boundedClaims(payload);
    const consumer = consumerOf(p, payload, claims);
    if (typeof consumer === 'string') return deny('malformed', consumer);
    const setHeaders: Record<string, string> = p.forwardToken ? {} : { ...removal.setHeaders };
    for (const c of p.claimsToHeaders) {
      const v = headerValue(payload[c.claim]);
      if (v !== null) setHeaders[c.header] = v;
    }
    const removeHeaders = [...(p.forwardToken ? [] : (removal.removeHeaders ?? [])), ...this.#claimHeaders];
    const pass: AuthPass = {
      ok: true,
      consumer,
      note: dropped ? `provider ${p.name}; ${dropped} claims over the bounds left out` : `provider ${p.name}`,
      ...(removeHeaders.length ? { removeHeaders } : {}),
      ...(Object.keys(setHeaders).length ? { setHeaders } : {}),
      ...(!p.forwardToken && removal.removeQuery ? { removeQuery: removal.removeQuery } : {}),
    };
    return pass;
  }
}

/** A base64url part as a JSON object, or null. */
function decodeJson(part: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** What jose's refusal means, as a denial. */
function refusal(err: unknown): AuthDenial {
  const e = err as { code?: string; claim?: string };
  switch (e.code) {
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return deny('bad_signature', 'the token\'s signature does not verify');
    case 'ERR_JWT_EXPIRED':
      return deny('expired', 'the token has expired');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (e.claim === 'nbf') return deny('not_yet_valid', 'the token is not valid yet (its nbf is in the future)');
      if (e.claim === 'iss') return deny('bad_issuer', 'the token\'s iss is not the provider\'s issuer');
      if (e.claim === 'aud') return deny('bad_audience', 'the token\'s aud names none of the provider\'s audiences');
      if (e.claim === 'exp') return deny('malformed', 'the token has no valid exp claim');
      return deny('malformed', 'a claim of the token is not valid');
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return deny('bad_algorithm', 'the token\'s alg is not accepted for its key');
    case 'ERR_JWT_INVALID':
      return deny('malformed', 'the token\'s payload is not a JSON object of claims');
    default:
      // A TypeError of jose: the key does not suit the algorithm.
      if (err instanceof TypeError) return deny('bad_algorithm', 'the token\'s alg is not accepted for its key');
      return deny('malformed', 'the token is not a valid JWS');
  }
}

/** A 401 with RFC 6750's challenge: no error code when there was no token, invalid_request for a request that holds none usable, invalid_token otherwise. */
function deny(reason: Exclude<JwtReason, 'keys_unavailable'>, detail: string, error: 'invalid_request' | 'invalid_token' = 'invalid_token'): AuthDenial {
  const challenge = reason === 'missing' ? 'Bearer realm="tollgate"' : `Bearer realm="tollgate", error="${error}", error_description="${quoted(detail)}"`;
  return { ok: false, error: ERRORS.unauthenticated, reason, detail, challenge };
}

function unavailable(p: Provider): AuthDenial {
  return {
    ok: false,
    error: ERRORS.jwksUnavailable,
    reason: 'keys_unavailable',
    detail: `provider ${p.ir.name}'s key set could not be fetched yet`,
    headers: { 'retry-after': String(MIN_REFRESH_INTERVAL_MS / 1000) },
  };
}

/** Text safe inside a quoted-string of a header. */
function quoted(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, "'");
}
