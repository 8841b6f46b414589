// What an expression's text must satisfy before the parser sees it. @bufbuild/cel's parser
// backtracks: 300 unclosed "[" took it 1.6 s and 500 unclosed "(" 4.4 s to refuse, so the
// nesting of brackets is bounded first, by a scan linear in the text.

/** Longest expression, in characters. */
export const MAX_EXPRESSION_LENGTH = 1024;
/** Deepest nesting of (), [] and {}: far more than an expression needs, far less than makes the parser slow. */
export const MAX_EXPRESSION_NESTING = 32;

/**
 * Deepest bracket nesting outside string literals. Quotes are followed as CEL writes them
 * (', ", their triple forms, raw strings whose backslashes escape nothing); where the scan
 * and the parser could disagree, the scan sees more nesting, never less.
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      const triple = text.startsWith(c.repeat(3), i);
      const close = triple ? c.repeat(3) : c;
      const raw = /[rR]/.test(text[i - 1] ?? '') || /[rR]/.test(text[i - 2] ?? '');
      i += close.length;
      while (i < text.length && !text.startsWith(close, i)) {
        // A single-quoted string ends at a newline; the rest is code again.
        if (!triple && text[i] === '\n') break;
        i += !raw && text[i] === '\\' ? 2 : 1;
      }
      i += close.length;
      continue;
    }
    if (c === '(' || c === '[' || c === '{') deepest = Math.max(deepest, ++depth);
    else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
    i++;
  }
  return deepest;
}

/** Why `text` is refused before parsing (phrased to follow `got "<text>"`), or null. */
export function textProblem(text: string): string | null {
  if (text.length > MAX_EXPRESSION_LENGTH) return `the expression is ${text.length} characters long, more than the ${MAX_EXPRESSION_LENGTH} allowed`;
  const depth = nestingDepth(text);
  if (depth > MAX_EXPRESSION_NESTING) return `brackets nest ${depth} deep, more than the ${MAX_EXPRESSION_NESTING} allowed; split the expression`;
  return null;
}
