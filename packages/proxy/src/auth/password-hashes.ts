// Verifying a password against an htpasswd hash: bcrypt ($2a$, $2b$, $2y$) by bcryptjs, and
// SHA-crypt ($5$, $6$: Ulrich Drepper, "Unix crypt using SHA-256 and SHA-512", the algorithm
// of glibc's crypt()) and Apache's MD5-crypt ($apr1$: FreeBSD's md5crypt with another magic)
// written out here over node:crypto's hashes. The npm implementations of the last two were
// not fit: one allocates an array of `rounds` entries per verification, the other hashes a
// non-ASCII password as Latin-1 where htpasswd hashes its UTF-8 bytes. Test vectors:
// packages/proxy/test/password-hashes.test.ts (the spec's, and openssl passwd / htpasswd
// output). Runs in the password workers (password-worker.ts): this file imports nothing
// relative, so a worker can load it as it is.
import { createHash, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcryptjs';

export type HashScheme = 'bcrypt' | 'sha256-crypt' | 'sha512-crypt' | 'apr1';

const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** crypt's base-64: each triple of bytes (most significant first) as 4 characters, least significant 6 bits first. */
function b64From24(b2: number, b1: number, b0: number, n: number): string {
  let w = (b2 << 16) | (b1 << 8) | b0;
  let out = '';
  for (let i = 0; i < n; i++) {
    out += ITOA64[w & 0x3f];
    w >>>= 6;
  }
  return out;
}

/** The byte order in which SHA-crypt encodes its final digest: [b2, b1, b0] per group. */
const SHA256_ORDER = [
  [0, 10, 20], [21, 1, 11], [12, 22, 2], [3, 13, 23], [24, 4, 14], [15, 25, 5], [6, 16, 26], [27, 7, 17], [18, 28, 8], [9, 19, 29],
] as const;
const SHA512_ORDER = [
  [0, 21, 42], [22, 43, 1], [44, 2, 23], [3, 24, 45], [25, 46, 4], [47, 5, 26], [6, 27, 48], [28, 49, 7], [50, 8, 29], [9, 30, 51], [31, 52, 10],
  [53, 11, 32], [12, 33, 54], [34, 55, 13], [56, 14, 35], [15, 36, 57], [37, 58, 16], [59, 17, 38], [18, 39, 60], [40, 61, 19], [62, 20, 41],
] as const;

/** `times` copies of `block`, cut to `length` bytes (the spec's "repeated as many times as needed"). */
function repeatTo(block: Buffer, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let off = 0; off < length; off += block.length) block.copy(out, off, 0, Math.min(block.length, length - off));
  return out;
}

/**
 * The stretching loop SHA-crypt took from MD5-crypt: `rounds` digests, each of the previous one
 * (`c`) and the password and salt material (`p`, `s`) in an order the round's number decides.
 */
function stretch(algorithm: 'md5' | 'sha256' | 'sha512', rounds: number, c: Buffer, p: Buffer, s: Buffer): Buffer {
  for (let i = 0; i < rounds; i++) {
    const r = createHash(algorithm);
    r.update(i & 1 ? p : c);
    if (i % 3) r.update(s);
    if (i % 7) r.update(p);
    r.update(i & 1 ? c : p);
    c = r.digest();
  }
  return c;
}

/**
 * The hash part of SHA-crypt for `password` and `salt` (at most 16 bytes) with `rounds`
 * (1000 to 999,999,999; the caller bounds it further).
 */
export function shaCrypt(algorithm: 'sha256' | 'sha512', password: Buffer, salt: Buffer, rounds: number): string {
  const size = algorithm === 'sha256' ? 32 : 64;
  const h = () => createHash(algorithm);
  // Steps 4-8: digest B.
  const b = h().update(password).update(salt).update(password).digest();
  // Steps 1-3, 9-12: digest A.
  const a = h().update(password).update(salt);
  a.update(repeatTo(b, password.length));
  for (let n = password.length; n > 0; n >>>= 1) a.update(n & 1 ? b : password);
  const aDigest = a.digest();
  // Steps 13-16: P, the password's digest repeated to its length.
  const dp = h();
  for (let i = 0; i < password.length; i++) dp.update(password);
  const p = repeatTo(dp.digest(), password.length);
  // Steps 17-20: S, the salt's digest repeated to its length.
  const ds = h();
  for (let i = 0; i < 16 + aDigest[0]!; i++) ds.update(salt);
  const s = repeatTo(ds.digest(), salt.length);
  // Step 21: the rounds.
  const c = stretch(algorithm, rounds, aDigest, p, s);
  // Step 22: the encoding.
  let out = '';
  for (const [x, y, z] of size === 32 ? SHA256_ORDER : SHA512_ORDER) out += b64From24(c[x]!, c[y]!, c[z]!, 4);
  return size === 32 ? out + b64From24(0, c[31]!, c[30]!, 3) : out + b64From24(0, 0, c[63]!, 2);
}

/** The hash part of MD5-crypt with `magic` ("$apr1$" for Apache's, "$1$" for FreeBSD's). */
export function md5Crypt(password: Buffer, salt: Buffer, magic: string): string {
  const md5 = () => createHash('md5');
  const fin = md5().update(password).update(salt).update(password).digest();
  const ctx = md5().update(password).update(magic).update(salt);
  ctx.update(repeatTo(fin, password.length));
  for (let n = password.length; n > 0; n >>>= 1) ctx.update(n & 1 ? Buffer.of(0) : password.subarray(0, 1));
  const f = stretch('md5', 1000, ctx.digest(), password, salt);
  return b64From24(f[0]!, f[6]!, f[12]!, 4) + b64From24(f[1]!, f[7]!, f[13]!, 4) + b64From24(f[2]!, f[8]!, f[14]!, 4) + b64From24(f[3]!, f[9]!, f[15]!, 4) + b64From24(f[4]!, f[10]!, f[5]!, 4) + b64From24(0, 0, f[11]!, 2);
}

const SHA_CRYPT = /^\$([56])\$(?:rounds=(\d{1,9})\$)?([^$]{0,16})\$([./0-9A-Za-z]+)$/;
const APR1 = /^\$apr1\$([^$]{0,8})\$([./0-9A-Za-z]{22})$/;

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Whether `password` (UTF-8 text) matches `hash` of `scheme`. The hash was checked when the
 * htpasswd content was read (packages/api basic-auth-ir.ts), bounds included; a hash that does
 * not parse here does not match.
 */
export function verifyPassword(scheme: HashScheme, hash: string, password: string): boolean {
  if (scheme === 'bcrypt') return bcrypt.compareSync(password, hash);
  const pw = Buffer.from(password, 'utf8');
  if (scheme === 'apr1') {
    const m = APR1.exec(hash);
    return m !== null && sameText(md5Crypt(pw, Buffer.from(m[1]!, 'utf8'), '$apr1$'), m[2]!);
  }
  const m = SHA_CRYPT.exec(hash);
  if (m === null || (m[1] === '5') !== (scheme === 'sha256-crypt')) return false;
  const rounds = m[2] === undefined ? 5000 : Number(m[2]);
  return sameText(shaCrypt(m[1] === '5' ? 'sha256' : 'sha512', pw, Buffer.from(m[3]!, 'utf8'), Math.max(1000, rounds)), m[4]!);
}
