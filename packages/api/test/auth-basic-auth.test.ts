// basicAuth conversion: htpasswd content line by line. bcrypt, SHA-crypt and apr1 within their
// cost bounds are kept; {SHA}, crypt(3) DES, MD5-crypt, plain text, malformed lines and
// duplicate users are refused naming the line, never printing a hash.
import { describe, expect, it } from 'vitest';
import { NO_SOURCES, parseHtpasswd, toBasicAuthIR, type PolicySources, type Problem } from '../src/index.js';

const BCRYPT = '$2y$05$UoN.uiu24LIFj9tiYO5WzOYkW4516R/9BVBvZ5LwkU11byXUSofqC';
const APR1 = '$apr1$vuDxNBQl$YvE3CPwVkyrC.Ea.jLi871';
const SHA512 = '$6$Zx9.ab/c$NNVmeaY3JLpA/BNX/3RbHajyMoeQhYzNcl1e0UI2svWAPpA.gEc2Vzvp0bmGzCbN/B5kzIezpmLXQ8Txtqxwl1';
const SHA256 = '$5$rounds=5000$carolsalt$8exD5ElehuN6H5XGuilgnJBBq3IlbMuXTBtedWJp9D5';

function parse(text: string) {
  const problems: Problem[] = [];
  const users = parseHtpasswd(text, 'file h', 'at', problems);
  return { users, problems: problems.map((p) => p.message) };
}

describe('htpasswd content', () => {
  it('keeps bcrypt ($2a$, $2b$, $2y$), SHA-crypt and apr1 users; skips blank lines and comments; takes CRLF', () => {
    const { users, problems } = parse(['# admins', `alice:${BCRYPT}`, '', `bob:${APR1}\r`, `üser:${SHA512}`, `carol:${SHA256}`, `dave:${BCRYPT.replace('$2y$', '$2a$')}`, `erin:${BCRYPT.replace('$2y$', '$2b$')}`].join('\n'));
    expect(problems).toEqual([]);
    expect(users!.map((u) => [u.user, u.scheme])).toEqual([
      ['alice', 'bcrypt'],
      ['bob', 'apr1'],
      ['üser', 'sha512-crypt'],
      ['carol', 'sha256-crypt'],
      ['dave', 'bcrypt'],
      ['erin', 'bcrypt'],
    ]);
    expect(users![1]!.hash.reveal()).toBe(APR1);
    expect(JSON.stringify(users)).not.toContain(APR1);
  });

  it('refuses weak, unknown and malformed hashes, naming the line and user, never the hash', () => {
    const lines = [
      'sha1:{SHA}EfatjsUqKYSrqv18O1FlA3hcIHI=',
      'des:uerFDTjwZy.c6',
      'plain:Pl4inTextPw',
      'md5:$1$abc$OGyl6dDvZCDiGmIVbeuCq/',
      'argon:$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaA',
      'yes:$y$j9T$salt$hash',
      'x2x:$2x$05$UoN.uiu24LIFj9tiYO5WzOYkW4516R/9BVBvZ5LwkU11byXUSofqC',
      'badbcrypt:$2y$05$tooShort',
      'slow:$2y$15$UoN.uiu24LIFj9tiYO5WzOYkW4516R/9BVBvZ5LwkU11byXUSofqC',
      'fast:$2y$03$UoN.uiu24LIFj9tiYO5WzOYkW4516R/9BVBvZ5LwkU11byXUSofqC',
      'rounds:$6$rounds=2000000$salt$NNVmeaY3JLpA/BNX/3RbHajyMoeQhYzNcl1e0UI2svWAPpA.gEc2Vzvp0bmGzCbN/B5kzIezpmLXQ8Txtqxwl1',
      'lowrounds:$5$rounds=10$roundstoolow$yfvwcWrQ8l/K0DAWyuPMDNHpIVlTQebY9l/gL972bIC',
      'shortsha:$6$salt$abc',
      'badapr:$apr1$salt$tooshort',
      'nohash:',
      'no colon at all',
      ':nouser',
      ' spaced:' + APR1,
      `ok:${APR1}`,
      `ok:${BCRYPT}`,
    ];
    const { users, problems } = parse(lines.join('\n'));
    expect(users).toBeNull();
    const fix = 're-create the line with htpasswd -B (bcrypt)';
    expect(problems).toEqual([
      `file h line 1: user "sha1": {SHA} is unsalted SHA-1, cracked at billions of guesses a second; ${fix}`,
      `file h line 2: user "des": crypt(3) DES uses only the first 8 characters of a password and is cracked in hours; ${fix}`,
      `file h line 3: user "plain": is not a password hash (plain text is not accepted); ${fix}`,
      `file h line 4: user "md5": MD5-crypt ($1$) is not accepted; ${fix}`,
      `file h line 5: user "argon": the hash scheme $argon2id$ is not one of bcrypt ($2a$, $2b$, $2y$), SHA-crypt ($5$, $6$) or apr1 ($apr1$); ${fix}`,
      `file h line 6: user "yes": the hash scheme $y$ is not one of bcrypt ($2a$, $2b$, $2y$), SHA-crypt ($5$, $6$) or apr1 ($apr1$); ${fix}`,
      `file h line 7: user "x2x": the bcrypt variant $2x$ (hashes made by a buggy library) is not accepted; ${fix}`,
      'file h line 8: user "badbcrypt": is a malformed bcrypt hash ($2a$, $2b$ or $2y$, a cost of two digits and 53 characters)',
      'file h line 9: user "slow": bcrypt cost 15 is outside 4 to 14: each verification at cost 15 takes too long; re-create the line with htpasswd -B -C 5 to 14',
      'file h line 10: user "fast": bcrypt cost 3 is outside 4 to 14: each verification at cost 3 takes too little; re-create the line with htpasswd -B -C 5 to 14',
      `file h line 11: user "rounds": SHA-512-crypt rounds=2000000 is outside 1000 to 1000000; re-create the hash with fewer rounds, or ${fix}`,
      `file h line 12: user "lowrounds": SHA-256-crypt rounds=10 is outside 1000 to 1000000; re-create the hash with fewer rounds, or ${fix}`,
      'file h line 13: user "shortsha": is a malformed SHA-512-crypt hash: the hash part must have 86 characters',
      'file h line 14: user "badapr": is a malformed apr1 hash ($apr1$, a salt of at most 8 characters, $, 22 characters)',
      `file h line 15: user "nohash": has no password hash; ${fix}`,
      'file h line 16: is not user:hash (no ":")',
      'file h line 17: has no user name before ":"',
      'file h line 18: user " spaced" starts or ends with a space; a client would have to send it too',
      'file h line 20: user "ok" is also on line 19; list each user once',
    ]);
    for (const p of problems) for (const secret of ['EfatjsUqKYSrqv18O1FlA3hcIHI', 'uerFDTjwZy', 'Pl4inTextPw', 'OGyl6dDvZCDiGmIVbeuCq', 'YvE3CPwVkyrC', 'aGFzaA', 'tooshort']) expect(p).not.toContain(secret);
  });

  it('bounds lines and their length', () => {
    expect(parse(`${'a'.repeat(1100)}:${APR1}`).problems).toEqual(['file h line 1: is 1138 characters, more than 1024']);
    expect(parse(`${'#\n'.repeat(100_001)}`).problems).toEqual(['file h has 100001 lines, more than the 100000 an htpasswd may have']);
    expect(parse(`${'u'.repeat(254)}:${APR1}`).problems).toEqual(['file h line 1: user name is 254 characters, more than 253']);
  });
});

describe('basicAuth', () => {
  const src = (text: string): PolicySources => ({ ...NO_SOURCES, text: (_at, ref) => ({ ok: true, value: { origin: 'file' in ref ? `file ${ref.file}` : `Secret ${ref.name} key ${ref.key}`, text } }) });

  it('reads the file (standalone) or the Secret key, .htpasswd by default (cluster), realm "tollgate" by default', () => {
    const problems: Problem[] = [];
    const a = toBasicAuthIR({ htpasswd: { file: 'h' } }, 'p', src(`alice:${APR1}`), problems);
    expect(a).toMatchObject({ realm: 'tollgate', origin: 'file h', users: [{ user: 'alice', scheme: 'apr1' }] });
    const b = toBasicAuthIR({ htpasswd: { secretRef: { name: 's' } }, realm: 'Team' }, 'p', src(`alice:${APR1}`), problems);
    expect(b).toMatchObject({ realm: 'Team', origin: 'Secret s key .htpasswd' });
    expect(problems).toEqual([]);
  });

  it('names the reference field and the line of a bad one', () => {
    const problems: Problem[] = [];
    expect(toBasicAuthIR({ htpasswd: { file: 'h' } }, 'p', src('x:plain'), problems)).toBeNull();
    expect(problems).toEqual([{ path: 'p.htpasswd.file', message: 'file h line 1: user "x": is not a password hash (plain text is not accepted); re-create the line with htpasswd -B (bcrypt)' }]);
  });
});
