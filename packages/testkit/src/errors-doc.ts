// docs/errors.md is kept equal to the error catalogs: each package has a section (a level-2
// heading naming the package) holding one table, rendered here from the catalog. A suite
// compares each section with its catalog; UPDATE_ERRORS_DOC=1 rewrites the tables instead.
import { readFileSync, writeFileSync } from 'node:fs';

export interface DocEntry {
  readonly code: string;
  readonly status?: number;
  readonly message: string;
  readonly hint: string;
}

const HEAD = ['| Code | HTTP status | Message | How to fix |', '|---|---|---|---|'];

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The table of one catalog, sorted by code. */
export function renderErrorTable(entries: readonly DocEntry[]): string {
  const rows = [...entries]
    .sort((a, b) => a.code.localeCompare(b.code))
    .map((e) => `| \`${e.code}\` | ${e.status ?? '—'} | ${cell(e.message)} | ${cell(e.hint)} |`);
  return [...HEAD, ...rows].join('\n');
}

/** Where the table under `## <heading>` is: [first line, end line) of `lines`, or null. */
function tableRange(lines: readonly string[], heading: string): [number, number] | null {
  const start = lines.findIndex((l) => l.trim() === `## ${heading}`);
  if (start < 0) return null;
  let i = start + 1;
  while (i < lines.length && !lines[i]!.startsWith('|') && !lines[i]!.startsWith('## ')) i++;
  if (i >= lines.length || !lines[i]!.startsWith('|')) return null;
  let end = i;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  return [i, end];
}

/** The table under `## <heading>` (null when the section or its table is missing). */
export function docTable(markdown: string, heading: string): string | null {
  const lines = markdown.split('\n');
  const range = tableRange(lines, heading);
  return range ? lines.slice(range[0], range[1]).join('\n') : null;
}

/** Every `TG_*` code the page mentions in a table row. */
export function docCodes(markdown: string): string[] {
  return [...markdown.matchAll(/^\| `(TG_[A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);
}

/**
 * Compares the section of each catalog with its rendering; with UPDATE_ERRORS_DOC=1 rewrites
 * the tables and reports no difference. Returns the headings whose table differs.
 */
export function syncErrorsDoc(path: string, catalogs: Readonly<Record<string, readonly DocEntry[]>>, update = process.env.UPDATE_ERRORS_DOC === '1'): string[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const stale: string[] = [];
  for (const [heading, entries] of Object.entries(catalogs)) {
    const want = renderErrorTable(entries);
    const range = tableRange(lines, heading);
    if (range && lines.slice(range[0], range[1]).join('\n') === want) continue;
    if (!update || range === null) {
      stale.push(heading);
      continue;
    }
    lines.splice(range[0], range[1] - range[0], ...want.split('\n'));
  }
  if (update) writeFileSync(path, lines.join('\n'));
  return stale;
}
