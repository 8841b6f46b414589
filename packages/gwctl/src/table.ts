// Aligned plain-text tables in the kubectl style: upper-case headers, columns separated by
// three spaces, no trailing blanks.
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}
