// The exit codes of `tollgate`: the table in the code, the one `tollgate --help` prints and the
// one in docs/tollgate.md are the same, code for code and word for word.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXIT, EXIT_CODE_HELP, EXIT_MEANINGS } from '../src/exit-codes.js';

const BIN = fileURLToPath(new URL('../bin/tollgate.js', import.meta.url));
const DOC = fileURLToPath(new URL('../../../docs/tollgate.md', import.meta.url));

/** The `| code | meaning |` rows of the table under `heading`, backticks dropped. */
function documented(markdown: string, heading: string): Record<string, string> {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no "${heading}" section`);
  const section = markdown.slice(start + heading.length + 2).split(/\n#{1,6} /)[0]!;
  const rows = section.split('\n').filter((l) => /^\| *\d+ *\|/.test(l));
  return Object.fromEntries(rows.map((l) => l.split('|').map((c) => c.trim().replace(/`/g, ''))).map((cells) => [cells[1]!, cells[2]!]));
}

describe('tollgate exit codes', () => {
  it('docs/tollgate.md lists exactly the codes of the code, with the same meanings', () => {
    expect(documented(readFileSync(DOC, 'utf8'), '## Exit codes')).toEqual(Object.fromEntries(Object.entries(EXIT_MEANINGS)));
    expect(Object.keys(EXIT_MEANINGS).map(Number).sort()).toEqual(Object.values(EXIT).sort());
  });

  it('tollgate --help prints the same table', () => {
    const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(EXIT.OK);
    expect(help.stdout).toContain(EXIT_CODE_HELP);
  });
});
