// The oidc kind's cookies: a JSON value sealed with AES-256-GCM (a random 96-bit IV per seal,
// the cookie's name as additional data, so a value cannot be moved to another cookie), written
// as base64url and split over <name>, <name>.1, ... when longer than one cookie may be. Opening
// refuses anything tampered, truncated, expired or over its bounds, without saying more than
// that: the value is the client's, the reason is ours.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { COOKIE_CHUNK_BYTES } from '@tollgate/api';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';

/** The cookies of a request by name; at most `max` read, each at most `maxBytes`, the first of a name wins. */
export function readCookies(header: string | undefined, prefix: string, max: number): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name !== prefix && !name.startsWith(`${prefix}.`)) continue;
    if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
    if (out.size > max) break;
  }
  return out;
}

/** The Cookie header without the cookies named `prefix` or `prefix.*`: what the backend gets; null when nothing is left. */
export function cookiesWithout(header: string | undefined, prefix: string): string | null {
  if (!header) return null;
  const kept = header.split(';').filter((part) => {
    const name = part.slice(0, Math.max(0, part.indexOf('='))).trim();
    return name !== prefix && !name.startsWith(`${prefix}.`);
  });
  const text = kept.map((p) => p.trim()).filter(Boolean).join('; ');
  return text || null;
}

export class CookieSealer {
  readonly #key: Buffer;
  constructor(keyBase64: string) {
    this.#key = Buffer.from(keyBase64, 'base64');
  }

  seal(name: string, value: unknown): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(`${VERSION}:${name}`));
    const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** The value sealed under `name`, or null when the text is not one (tampered, another key, truncated). */
  open(name: string, text: string, maxBytes: number): unknown {
    if (text.length > maxBytes || !text.startsWith(`${VERSION}.`)) return null;
    const raw = Buffer.from(text.slice(VERSION.length + 1), 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES + 1) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(`${VERSION}:${name}`));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as unknown;
    } catch {
      return null;
    }
  }
}

/** A sealed value as chunks of at most COOKIE_CHUNK_BYTES: [<name>, v], [<name>.1, v], ...; null when more than `maxChunks`. */
export function chunk(name: string, sealed: string, maxChunks: number): [string, string][] | null {
  const n = Math.max(1, Math.ceil(sealed.length / COOKIE_CHUNK_BYTES));
  if (n > maxChunks) return null;
  const out: [string, string][] = [];
  for (let i = 0; i < n; i++) out.push([i === 0 ? name : `${name}.${i}`, sealed.slice(i * COOKIE_CHUNK_BYTES, (i + 1) * COOKIE_CHUNK_BYTES)]);
  return out;
}

/** The chunks of `name` joined in order; null when one is missing (a chunk past maxChunks is never read). */
export function unchunk(cookies: ReadonlyMap<string, string>, name: string, maxChunks: number): string | null {
  const first = cookies.get(name);
  if (first === undefined) return null;
  let text = first;
  for (let i = 1; i < maxChunks; i++) {
    const next = cookies.get(`${name}.${i}`);
    if (next === undefined) break;
    text += next;
  }
  return text;
}

/** A Set-Cookie value: always Secure, HttpOnly, SameSite=Lax, Path=/. maxAgeS 0 clears it. */
export function setCookie(name: string, value: string, maxAgeS: number): string {
  return `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeS))}; Secure; HttpOnly; SameSite=Lax`;
}
