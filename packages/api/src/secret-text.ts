// Whether text written in a config (an expression, a value) looks like it holds a credential:
// the known shapes of provider keys and tokens, an HTTP credential scheme, or a long random
// run of characters. A heuristic for what config dumps and traces print of values that are not
// under a credential header's name (secret.ts has the name lists): it errs towards redacting,
// and a value it misses is still only in the operator's own config and the snapshot stream.

/** Prefixes of well-known credentials (OpenAI, Anthropic, Stripe, GitHub, GitLab, Slack, AWS, Google, Hugging Face, npm, PyPI) and JWTs. */
const PREFIXES = [
  'sk-',
  'sk_',
  'rk_',
  'pk_live_',
  'ghp_',
  'gho_',
  'ghu_',
  'ghs_',
  'ghr_',
  'github_pat_',
  'glpat-',
  'xoxb-',
  'xoxp-',
  'xoxa-',
  'xoxr-',
  'xoxs-',
  'AKIA',
  'ASIA',
  'AIza',
  'ya29.',
  'hf_',
  'npm_',
  'pypi-',
  'eyJ',
];

/** After a prefix, at least this many more characters make a credential (not a word that happens to start so). */
const MIN_AFTER_PREFIX = 8;
/** A run of letters, digits and base64 signs this long, with letters and digits, reads as random. */
const RANDOM_RUN = 32;

const TOKEN = /[A-Za-z0-9+/=_.:~-]+/g;
const RUN = /[A-Za-z0-9+/=_]{32,}/g;
const SCHEME = /\b(?:Bearer|Basic|Digest|Token|ApiKey)\s+\S{4,}/i;

function randomRun(text: string): boolean {
  for (const m of text.matchAll(RUN)) {
    const run = m[0];
    if (run.length >= RANDOM_RUN && /[0-9]/.test(run) && /[A-Za-z]/.test(run)) return true;
  }
  return false;
}

/** Whether `text` holds something shaped like a credential (see the file comment). */
export function looksLikeSecret(text: string): boolean {
  if (SCHEME.test(text) || randomRun(text)) return true;
  for (const m of text.matchAll(TOKEN)) {
    const token = m[0];
    if (PREFIXES.some((p) => token.startsWith(p) && token.length >= p.length + MIN_AFTER_PREFIX)) return true;
  }
  return false;
}
