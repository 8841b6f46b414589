// The exit codes of `gwctl`: the table in the code, the one `gwctl --help` prints and the one
// in docs/gwctl.md are the same, code for code and word for word, and every error code maps to
// a documented exit code.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT, EXIT_CODE_HELP, EXIT_MEANINGS, GwctlError, type ErrorCode } from '../src/errors.js';
import { gwctl } from './helpers.js';

const DOC = fileURLToPath(new URL('../../../docs/gwctl.md', import.meta.url));

/** The `| code | meaning | ... |` rows of the table under `heading`, backticks dropped. */
function documented(markdown: string, heading: string): Record<string, string> {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no "${heading}" section`);
  const section = markdown.slice(start + heading.length + 2).split(/\n#{1,6} /)[0]!;
  const rows = section.split('\n').filter((l) => /^\| *\d+ *\|/.test(l));
  return Object.fromEntries(rows.map((l) => l.split('|').map((c) => c.trim().replace(/`/g, ''))).map((cells) => [cells[1]!, cells[2]!]));
}

const ERROR_CODES: ErrorCode[] = [
  'TG_GWCTL_USAGE',
  'TG_GWCTL_KUBECONFIG',
  'TG_GWCTL_KUBE_API',
  'TG_GWCTL_NO_POD',
  'TG_GWCTL_PORT_FORWARD',
  'TG_GWCTL_ADMIN_UNREACHABLE',
  'TG_GWCTL_ADMIN_ERROR',
  'TG_GWCTL_INPUT',
  'TG_GWCTL_REQUEST_FAILED',
  'TG_GWCTL_ADMIN_TIMEOUT',
  'TG_GWCTL_NO_GATEWAY',
  'TG_GWCTL_INTERRUPTED',
];

describe('gwctl exit codes', () => {
  it('docs/gwctl.md lists exactly the codes of the code, with the same meanings', () => {
    expect(documented(readFileSync(DOC, 'utf8'), '## Errors and exit codes')).toEqual(Object.fromEntries(Object.entries(EXIT_MEANINGS)));
    expect(Object.keys(EXIT_MEANINGS).map(Number).sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });

  it('every error code exits with a documented code, each code but success and a bug has an error code', () => {
    const used = new Set(ERROR_CODES.map((c) => new GwctlError(c, 'x').exitCode));
    for (const code of used) expect(EXIT_MEANINGS[code]).toBeDefined();
    expect([...used, EXIT.OK, EXIT.INTERNAL].sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });

  it('gwctl --help ends with the same table', async () => {
    const r = await gwctl(['--help']);
    expect(r.code).toBe(EXIT.OK);
    expect(r.stdout).toContain(EXIT_CODE_HELP);
  });
});
