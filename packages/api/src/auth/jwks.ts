// What a JSON Web Key Set must be for Tollgate to verify tokens with it: the one place that
// decides, used when a policy is translated (an inline, file or Secret/ConfigMap key set) and
// when a proxy fetches a remote one. Only public keys of asymmetric signature algorithms are
// accepted: a symmetric (`oct`) key would let HS256 tokens in, and an HS256 token whose
// "secret" is the issuer's public key is the classic key-confusion forgery, so no HMAC key
// exists anywhere for a token to be checked against.
import { createPublicKey } from 'node:crypto';

/** Largest JWKS document read (inline, file, Secret or ConfigMap key, remote answer). */
export const MAX_JWKS_BYTES = 262_144;
/** Most keys in one document. */
export const MAX_JWKS_KEYS = 64;
export const MAX_KID_LENGTH = 256;
export const MIN_RSA_BITS = 2048;
export const MAX_RSA_BITS = 8192;

/** The signature algorithms a token may use; `none` and HS* are never accepted. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

const ACCEPTED: ReadonlySet<string> = new Set(JWT_ALGORITHMS);
export function isJwtAlgorithm(alg: unknown): alg is JwtAlgorithm {
  return typeof alg === 'string' && ACCEPTED.has(alg);
}

const EC_CURVE: Readonly<Record<string, string>> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };
/** Ed448 is left out: jose (the verifier) does not verify it. */
const OKP_CURVES: ReadonlySet<string> = new Set(['Ed25519']);
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;
/** JWE key management algorithms: a key carrying one is an encryption key, never used here. */
const ENCRYPTION_ALG = /^(RSA1_5|RSA-OAEP.*|ECDH-ES.*|A\d+KW|A\d+GCMKW|dir|PBES2.*)$/;

/** A verification key as the proxy uses it. */
export interface VerificationKey {
  /** Position in the document, for messages. */
  readonly index: number;
  readonly kid: string | null;
  readonly kty: 'RSA' | 'EC' | 'OKP';
  /** EC and OKP: the curve; RSA: null. */
  readonly crv: string | null;
  /** The key's own `alg`, when it names one: only that algorithm may use it. */
  readonly alg: JwtAlgorithm | null;
  /** The public members only (kty, n, e / crv, x, y), frozen: what the verifier imports. */
  readonly jwk: Readonly<Record<string, string>>;
}

/** Whether `key` may verify a signature made with `alg`. */
export function keyFits(key: VerificationKey, alg: JwtAlgorithm): boolean {
  if (key.alg !== null && key.alg !== alg) return false;
  if (alg.startsWith('RS') || alg.startsWith('PS')) return key.kty === 'RSA';
  if (alg === 'EdDSA') return key.kty === 'OKP';
  return key.kty === 'EC' && key.crv === EC_CURVE[alg];
}

/**
 * `strict` (a key set written into a policy): a key of a type Tollgate cannot use is refused,
 * naming it. `lenient` (a key set fetched from an issuer, whose set the operator does not
 * write): such keys are left out, so a provider that also publishes, say, a secp256k1 key
 * keeps working for the keys Tollgate can use. Either way symmetric and private keys refuse
 * the whole set: an issuer publishing them is misconfigured or compromised.
 */
export type JwksMode = 'strict' | 'lenient';

export type JwksResult =
  | { readonly ok: true; readonly keys: readonly VerificationKey[]; readonly ignored: number }
  | { readonly ok: false; readonly problem: string };

const ACCEPTED_TYPES = 'accepted: RSA (2048 to 8192 bits), EC (P-256, P-384, P-521), OKP (Ed25519)';

/** Checks and reads a JWKS document. */
export function parseJwks(text: string, mode: JwksMode): JwksResult {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_JWKS_BYTES) return { ok: false, problem: `the key set is ${bytes} bytes, more than the ${MAX_JWKS_BYTES} a key set may have` };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `the key set is not JSON (${(err as Error).message}); write a JWKS document: {"keys": [ ... ]}` };
  }
  if (!isObject(doc) || !Array.isArray(doc.keys)) return { ok: false, problem: 'the key set has no "keys" array; write a JWKS document: {"keys": [ ... ]}' };
  if (doc.keys.length > MAX_JWKS_KEYS) return { ok: false, problem: `the key set has ${doc.keys.length} keys, more than the ${MAX_JWKS_KEYS} a key set may have` };
  const keys: VerificationKey[] = [];
  let ignored = 0;
  for (let i = 0; i < doc.keys.length; i++) {
    const r = readKey(doc.keys[i], i, mode);
    if (r === null) ignored++;
    else if (typeof r === 'string') return { ok: false, problem: `keys[${i}] ${r}` };
    else keys.push(r);
  }
  if (!keys.length) {
    return { ok: false, problem: doc.keys.length ? `the key set has no key that can verify signatures (${ACCEPTED_TYPES}; keys with "use": "enc" are left out)` : 'the key set has no keys' };
  }
  return { ok: true, keys, ignored };
}

/** The key, null when it is left out, or what is wrong with it. */
function readKey(raw: unknown, index: number, mode: JwksMode): VerificationKey | null | string {
  if (!isObject(raw)) return 'is not an object';
  const { kty, kid, use, alg } = raw;
  if (typeof kty !== 'string') return 'has no "kty" (key type)';
  if (kty === 'oct') return 'is a symmetric (oct) key: HMAC is not accepted, because a token signed with HS256 over a public key would pass for a real one (key confusion); publish RSA, EC or OKP public keys';
  const secret = PRIVATE_MEMBERS.find((m) => raw[m] !== undefined);
  if (secret) return `holds private key material ("${secret}"): a key set for verification holds public keys only; remove the private members`;
  if (kid !== undefined && (typeof kid !== 'string' || kid.length === 0 || kid.length > MAX_KID_LENGTH)) return `has a "kid" that is not a string of 1 to ${MAX_KID_LENGTH} characters`;
  if (alg !== undefined && typeof alg !== 'string') return 'has an "alg" that is not a string';
  // Encryption keys are legitimately published beside signing keys (Keycloak does): left out.
  if (use === 'enc' || (typeof alg === 'string' && ENCRYPTION_ALG.test(alg))) return null;
  if (Array.isArray(raw.key_ops) && !raw.key_ops.includes('verify')) return null;
  if (use !== undefined && use !== 'sig') return mode === 'strict' ? `has "use": ${JSON.stringify(use)}; a verification key has "use": "sig" or none` : null;
  if (typeof alg === 'string' && (alg === 'none' || alg.startsWith('HS'))) return `has "alg": "${alg}", which is never accepted (accepted: ${JWT_ALGORITHMS.join(', ')})`;
  if (alg !== undefined && !isJwtAlgorithm(alg)) return mode === 'strict' ? `has "alg": ${JSON.stringify(alg)}; accepted: ${JWT_ALGORITHMS.join(', ')}` : null;
  const shape = publicMembers(raw, kty);
  if (typeof shape === 'string') return mode === 'strict' || shape.startsWith('!') ? shape.replace(/^!/, '') : null;
  let bits: number | undefined;
  try {
    const k = createPublicKey({ key: shape.jwk, format: 'jwk' });
    bits = k.asymmetricKeyDetails?.modulusLength;
  } catch (err) {
    return `is not a valid ${kty} public key (${(err as Error).message})`;
  }
  if (kty === 'RSA' && (bits === undefined || bits < MIN_RSA_BITS || bits > MAX_RSA_BITS)) {
    return mode === 'strict' ? `is a ${bits ?? 'unknown'}-bit RSA key; RSA keys of ${MIN_RSA_BITS} to ${MAX_RSA_BITS} bits are accepted` : null;
  }
  const key: VerificationKey = { index, kid: kid ?? null, kty: shape.kty, crv: shape.crv, alg: alg ?? null, jwk: Object.freeze(shape.jwk) };
  if (key.alg !== null && !keyFits(key, key.alg)) return `has "alg": "${key.alg}", which does not fit a ${kty}${key.crv ? ` ${key.crv}` : ''} key`;
  return key;
}

type Shape = { readonly kty: VerificationKey['kty']; readonly crv: string | null; readonly jwk: Record<string, string> };

/** The public members of a supported key; a message when unsupported (`!`: refused even when lenient). */
function publicMembers(raw: Record<string, unknown>, kty: string): Shape | string {
  const str = (name: string): string | undefined => {
    const v = raw[name];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  if (kty === 'RSA') {
    const n = str('n');
    const e = str('e');
    if (!n || !e) return '!is an RSA key without "n" and "e"';
    return { kty, crv: null, jwk: { kty, n, e } };
  }
  const crv = str('crv');
  const x = str('x');
  if (kty === 'EC') {
    if (!crv || !Object.values(EC_CURVE).includes(crv)) return `is an EC key on ${crv ? `"${crv}"` : 'no curve'}; ${ACCEPTED_TYPES}`;
    const y = str('y');
    if (!x || !y) return '!is an EC key without "x" and "y"';
    return { kty, crv, jwk: { kty, crv, x, y } };
  }
  if (kty === 'OKP') {
    if (!crv || !OKP_CURVES.has(crv)) return `is an OKP key on ${crv ? `"${crv}"` : 'no curve'}; ${ACCEPTED_TYPES}`;
    if (!x) return '!is an OKP key without "x"';
    return { kty, crv, jwk: { kty, crv, x } };
  }
  return `has "kty": ${JSON.stringify(kty)}; ${ACCEPTED_TYPES}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
