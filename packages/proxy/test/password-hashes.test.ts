// The password hash algorithms against hashes other implementations made: the SHA-crypt
// specification's examples (Drepper, "Unix crypt using SHA-256 and SHA-512"), and hashes made
// on this machine by OpenSSL 3.0 (`openssl passwd -5 / -6 / -apr1 -salt ...`, glibc-compatible)
// and Apache's htpasswd 2.4 (`htpasswd -nbB`, `-nbm`): empty-to-long passwords (across the
// 32- and 64-byte digest blocks), UTF-8 passwords, salts cut at 16 (8 for apr1) characters,
// explicit rounds.
import { describe, expect, it } from 'vitest';
import { verifyPassword, type HashScheme } from '../src/auth/password-hashes.js';

const QUICK = 'The quick brown fox jumps over the lazy dog '.repeat(4);

const VECTORS: [HashScheme, string, string][] = [
  // The specification's examples.
  ['sha256-crypt', '$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5', 'Hello world!'],
  ['sha512-crypt', '$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1', 'Hello world!'],
  ['sha512-crypt', '$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v.', 'Hello world!'],
  // openssl passwd -5.
  ['sha256-crypt', '$5$ab$WGOp4rrnVkzd41QtCddYFTEQ9dQil8O7VF2OXqtI3/7', 'a'],
  ['sha256-crypt', '$5$rounds=1000$short$ho2HJo2/g6SZqtPUX/8/OyaSE85S/nFHZN9qh7OT3I3', 'x'.repeat(64)],
  ['sha256-crypt', '$5$rounds=77777$12345678abcdefgh$LXam0iI7Lp39zGeSHVtTniTWfNJ/F9cROPVsKU9HwH.', 'y'.repeat(65)],
  ['sha256-crypt', '$5$toolongsaltstrin$DE7TRv2uZU4CXi1wDl2CxQjkYBk1Ail.reWwYPl94I2', QUICK],
  ['sha256-crypt', '$5$./Zz09$JRZMFVTGRD9yG1nCK4kpDDSQ2j9nGEzpt5ciUpks//C', 'pässwörd ✓'],
  ['sha256-crypt', '$5$rounds=5000$anotherlongsalt$yaR7CuxAFcUa3zxwMF9xjNoBbntgmUIztRpAhX2kaI/', 'we have a short salt string but not a short password'],
  // openssl passwd -6.
  ['sha512-crypt', '$6$ab$/PzCrRVMmcIPg399m0GjJEW7Is3nwj.HV3N4NLJLXwzwzPszJ55Jq.eFpjcqBciAH7lx4yAws1nleGIpiHDt91', 'a'],
  ['sha512-crypt', '$6$rounds=1000$short$eU90rSQBrDNQCwsQRMcoAHiYJc3e616.fY9KEd4cASebnAUK7gdxuxGOtE4kZAj91J6XSa.AuxQ7XSsxKlXWa0', 'x'.repeat(64)],
  ['sha512-crypt', '$6$rounds=77777$12345678abcdefgh$CdLcAoF5lRWJOnwAGN5Xux9hLWmJ7vqns3yTya1Vv7CPkhTTgWVkGZd2aH/GAUD4v7pFXD79iG0B62CKqvasm/', 'y'.repeat(65)],
  ['sha512-crypt', '$6$toolongsaltstrin$eKxpBZZqt2.rS2wr73r/foQ5a9SSwWjFwrOkQof.5Can9vQGZZ9upS8gcm9kY4C0QLyIT6rZs7M8HtpZVT90Z.', QUICK],
  ['sha512-crypt', '$6$./Zz09$Ib3jClrny3ZQc.8/GLTkjEdOxBup42lDNvbxyQlu8esYhp6.LNn7gh0c656MDRWHVKJIh4WchZhBUbzyX1wkB/', 'pässwörd ✓'],
  ['sha512-crypt', '$6$rounds=5000$anotherlongsalt$0WIkFhKoEDxWC3Z3eeVuFJvBj3bS4tO3OgZA.F9orKZAtgqEA4GgEjYOzIsaiuaWArvPW/wUu8PvvNjLhGdJH.', 'we have a short salt string but not a short password'],
  // openssl passwd -apr1 and htpasswd -nbm.
  ['apr1', '$apr1$a$drFGR/9p/sjZ9/qPTUuIf/', 'a'],
  ['apr1', '$apr1$$x.fISiQ9iuPtJUosYp7dy1', 'x'.repeat(64)],
  ['apr1', '$apr1$toolongs$HwLwnwWl4wnlcCxXC8rjh/', 'y'.repeat(65)],
  ['apr1', '$apr1$./Zz09$Feyv4.ahixVWM20TxRRcy.', QUICK],
  ['apr1', '$apr1$xyz$NirNYtECnAnTFuG5wiOdl0', 'pässwörd ✓'],
  ['apr1', '$apr1$12345678$IxhXFrLDinfrlspKxpij0.', 'we have a short salt string but not a short password'],
  ['apr1', '$apr1$vuDxNBQl$YvE3CPwVkyrC.Ea.jLi871', 'hunter2'],
  ['apr1', '$apr1$abcdefgh$HdzSIH30S9MXCZEFTyeOe.', 'pässword:x'],
  // htpasswd -nbB: bcrypt's own 72-byte limit applies to the UTF-8 bytes.
  ['bcrypt', '$2y$04$otun1wFUEUo7NbFDjJuRjebnpL0lynxSIY8hYXQFy.mwwhNTd6xyW', 'short'],
  ['bcrypt', '$2b$04$otun1wFUEUo7NbFDjJuRjebnpL0lynxSIY8hYXQFy.mwwhNTd6xyW', 'short'],
  ['bcrypt', '$2y$04$cIaIVc8XJPwTTzaiMloau.oHRBgqI54a8a.m.bE/bxSUOk/nhmbfK', 'pässwörd ✓ with a long tail that goes past seventy-two bytes of UTF-8 text.....'],
];

describe('password hashes', () => {
  it.each(VECTORS)('%s %s', (scheme, hash, password) => {
    expect(verifyPassword(scheme, hash, password)).toBe(true);
    expect(verifyPassword(scheme, hash, `${password}!`.slice(0, password.length + 1))).toBe(scheme === 'bcrypt' && Buffer.byteLength(password) >= 72);
    expect(verifyPassword(scheme, hash, password.slice(1))).toBe(false);
  });

  it('does not match a hash of the other scheme, or one that does not parse', () => {
    expect(verifyPassword('sha256-crypt', VECTORS[1]![1], 'Hello world!')).toBe(false);
    expect(verifyPassword('apr1', '$apr1$abc', 'x')).toBe(false);
    expect(verifyPassword('sha512-crypt', '$6$salt$short', 'x')).toBe(false);
  });
});
