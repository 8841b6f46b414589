// BasicAuthConfig to BasicAuthIR: the users of htpasswd content (a file standalone, a Secret
// or ConfigMap key in a cluster), line by line. Hashes a proxy can verify at a bounded cost are
// kept (bcrypt, SHA-crypt, apr1); hashes that can be cracked or read as they are ({SHA},
// crypt(3) DES, MD5-crypt $1$, plain text) are refused naming the line. No message quotes a
// hash or a password: a line is named by its number and its user.
import { MAX_CONSUMER_NAME_LENGTH } from '../cel/surfaces.js';
import { Secret } from '../secret.js';
import { joinPath, show, type Problem } from '../validation-error.js';
import { BASIC_AUTH_BOUNDS, type BasicAuthConfig, type BasicAuthIR, type BasicAuthUserIR, type PasswordScheme } from './basic-auth.js';
import { CONTROL_CHARACTER as CONTROL } from './refs.js';
import type { PolicySources } from './sources.js';

export type { BasicAuthIR };

export const DEFAULT_REALM = 'tollgate';

const FIX = 're-create the line with htpasswd -B (bcrypt)';

const BCRYPT = /^\$2([aby])\$(\d\d)\$[./A-Za-z0-9]{53}$/;
/** Salts of printable ASCII (glibc takes at most 16 bytes of salt; these are characters). */
const SHA_CRYPT = /^\$([56])\$(?:rounds=(\d{1,9})\$)?([\x21-\x23\x25-\x39\x3b-\x7e]{0,16})\$([./0-9A-Za-z]+)$/;
const APR1 = /^\$apr1\$([\x21-\x23\x25-\x39\x3b-\x7e]{0,8})\$[./0-9A-Za-z]{22}$/;
const DES = /^[./0-9A-Za-z]{13}$/;

export function toBasicAuthIR(config: BasicAuthConfig, at: string, sources: PolicySources, problems: Problem[]): BasicAuthIR | null {
  const { file, secretRef } = config.htpasswd;
  const refAt = joinPath(at, 'htpasswd');
  const read = sources.text(refAt, file !== undefined ? { file } : { ...secretRef!, key: secretRef?.key ?? '.htpasswd' });
  if (!read.ok) {
    problems.push(read.problem);
    return null;
  }
  const { origin, text } = read.value;
  const path = joinPath(refAt, file !== undefined ? 'file' : 'secretRef');
  const users = parseHtpasswd(text, origin, path, problems);
  return users === null ? null : { realm: config.realm ?? DEFAULT_REALM, origin, users };
}

/** The users of htpasswd `text`; null (and problems naming each bad line) when any line is bad. */
export function parseHtpasswd(text: string, origin: string, path: string, problems: Problem[]): BasicAuthUserIR[] | null {
  const { maxLines, maxLineLength } = BASIC_AUTH_BOUNDS;
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length > maxLines) {
    problems.push({ path, message: `${origin} has ${lines.length} lines, more than the ${maxLines} an htpasswd may have` });
    return null;
  }
  const before = problems.length;
  const firstLine = new Map<string, number>();
  const users: BasicAuthUserIR[] = [];
  lines.forEach((raw, i) => {
    const n = i + 1;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const bad = (message: string) => problems.push({ path, message: `${origin} line ${n}: ${message}` });
    if (line.length > maxLineLength) return bad(`is ${line.length} characters, more than ${maxLineLength}`);
    // Blank lines and comments, as Apache reads them.
    if (line.trim() === '' || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    if (colon < 0) return bad('is not user:hash (no ":")');
    const user = line.slice(0, colon);
    const hash = line.slice(colon + 1);
    const who = `user ${show(user)}`;
    if (user === '') return bad('has no user name before ":"');
    if (user.length > MAX_CONSUMER_NAME_LENGTH) return bad(`user name is ${user.length} characters, more than ${MAX_CONSUMER_NAME_LENGTH}`);
    if (CONTROL.test(user)) return bad('user name has a control character');
    if (user.trim() !== user) return bad(`${who} starts or ends with a space; a client would have to send it too`);
    const other = firstLine.get(user);
    if (other !== undefined) return bad(`${who} is also on line ${other}; list each user once`);
    firstLine.set(user, n);
    const scheme = hashScheme(hash);
    if (typeof scheme !== 'string') return bad(`${who}: ${scheme.problem}`);
    users.push({ user, scheme, hash: new Secret(hash) });
  });
  return problems.length > before ? null : users;
}

/** The scheme of an htpasswd hash, or why it is refused (naming the scheme, never the hash). */
function hashScheme(hash: string): PasswordScheme | { problem: string } {
  const { maxBcryptCost, maxShaCryptRounds } = BASIC_AUTH_BOUNDS;
  if (hash === '') return { problem: `has no password hash; ${FIX}` };
  let m = BCRYPT.exec(hash);
  if (m) {
    const cost = Number(m[2]);
    if (cost < 4 || cost > maxBcryptCost) return { problem: `bcrypt cost ${cost} is outside 4 to ${maxBcryptCost}: each verification at cost ${cost} takes ${cost > maxBcryptCost ? 'too long' : 'too little'}; re-create the line with htpasswd -B -C 5 to ${maxBcryptCost}` };
    return 'bcrypt';
  }
  if (/^\$2[axby]?\$/.test(hash)) {
    return { problem: /^\$2x\$/.test(hash) ? `the bcrypt variant $2x$ (hashes made by a buggy library) is not accepted; ${FIX}` : 'is a malformed bcrypt hash ($2a$, $2b$ or $2y$, a cost of two digits and 53 characters)' };
  }
  m = SHA_CRYPT.exec(hash);
  if (m) {
    const sha = m[1] === '5' ? 'SHA-256' : 'SHA-512';
    const length = m[1] === '5' ? 43 : 86;
    if (m[4]!.length !== length) return { problem: `is a malformed ${sha}-crypt hash: the hash part must have ${length} characters` };
    const rounds = m[2] === undefined ? 5000 : Number(m[2]);
    if (rounds < 1000 || rounds > maxShaCryptRounds) return { problem: `${sha}-crypt rounds=${rounds} is outside 1000 to ${maxShaCryptRounds}; re-create the hash with fewer rounds, or ${FIX}` };
    return m[1] === '5' ? 'sha256-crypt' : 'sha512-crypt';
  }
  if (/^\$[56]\$/.test(hash)) return { problem: 'is a malformed SHA-crypt hash ($5$ or $6$, an optional rounds=N$, a salt of at most 16 characters, $, the hash)' };
  if (APR1.test(hash)) return 'apr1';
  if (hash.startsWith('$apr1$')) return { problem: 'is a malformed apr1 hash ($apr1$, a salt of at most 8 characters, $, 22 characters)' };
  if (hash.startsWith('{SHA}')) return { problem: `{SHA} is unsalted SHA-1, cracked at billions of guesses a second; ${FIX}` };
  if (hash.startsWith('$1$')) return { problem: `MD5-crypt ($1$) is not accepted; ${FIX}` };
  if (hash.startsWith('$')) {
    const id = /^\$[A-Za-z0-9-]{1,16}\$/.exec(hash)?.[0];
    return { problem: `${id ? `the hash scheme ${id}` : 'the hash'} is not one of bcrypt ($2a$, $2b$, $2y$), SHA-crypt ($5$, $6$) or apr1 ($apr1$); ${FIX}` };
  }
  if (DES.test(hash)) return { problem: `crypt(3) DES uses only the first 8 characters of a password and is cracked in hours; ${FIX}` };
  return { problem: `is not a password hash (plain text is not accepted); ${FIX}` };
}
