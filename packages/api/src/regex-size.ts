// How big a pattern's RE2 program can get, read from the pattern text alone. Compiling is
// the expensive step (RE2 writes every counted repetition out: `(?:.?){1000}` is a
// 2,000-instruction program from 12 characters, and a few of those concatenated took the
// controller 0.6 s and 121 MiB to compile), so a pattern whose written-out size is too large
// is refused before it reaches the compiler.
//
// The figure is an upper bound of re2js's programSize(), not an estimate of it: every atom
// (a literal, a class, `.`, an assertion) counts 1, a capture 2, each alternative and each
// `*`, `+`, `?` 1, and `x{n,m}` (m + 1) copies of x with one more instruction each. A
// property test compiles generated patterns and checks programSize() never exceeds it.

/** Instructions every program has besides the pattern's own (match, fail, the whole-match capture). */
const PROGRAM_OVERHEAD = 4;

interface Frame {
  /** Sizes of the finished alternatives of this group. */
  readonly alternatives: number[];
  /** Size of the alternative being read. */
  current: number;
  /** Size of the last atom of `current`: what a quantifier applies to. */
  last: number;
  /** 2 for a capturing group, 0 otherwise. */
  readonly capture: number;
}

const newFrame = (capture: number): Frame => ({ alternatives: [], current: 0, last: 0, capture });

function frameSize(f: Frame): number {
  const sum = f.alternatives.reduce((a, b) => a + b, 0) + f.current;
  return sum + f.alternatives.length + f.capture;
}

const COUNTED = /\{(\d+)(,(\d*))?\}/y;

/** Index just past a `{n}`, `{n,}` or `{n,m}` at `i`, with its upper count; null when the braces are a literal `{`. */
function counted(p: string, i: number): { end: number; max: number } | null {
  COUNTED.lastIndex = i;
  const m = COUNTED.exec(p);
  if (!m) return null;
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : m[3] === '' ? lo + 1 : Number(m[3]);
  return { end: i + m[0].length, max: Math.max(lo, hi) };
}

/** Index just past the escape starting at `i` (a backslash). */
function escapeEnd(p: string, i: number): number {
  const c = p[i + 1];
  if (c === undefined) return i + 1;
  if ((c === 'x' || c === 'p' || c === 'P') && p[i + 2] === '{') {
    const close = p.indexOf('}', i + 3);
    return close < 0 ? p.length : close + 1;
  }
  if (c === 'x') return Math.min(p.length, i + 4);
  if (c === 'p' || c === 'P') return Math.min(p.length, i + 3);
  return i + 2;
}

/** Index just past the character class starting at `i` (a `[`). */
function classEnd(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === '^') j++;
  if (p[j] === ']') j++; // a leading ] is a literal
  while (j < p.length && p[j] !== ']') {
    if (p[j] === '\\') j = escapeEnd(p, j);
    else if (p[j] === '[' && p[j + 1] === ':') {
      const close = p.indexOf(':]', j + 2);
      j = close < 0 ? j + 1 : close + 2;
    } else j++;
  }
  return j + 1;
}

/**
 * An upper bound of the size of `pattern`'s compiled program (re2js programSize()), from its
 * text. Linear in the pattern's length; never compiles. Malformed patterns get a figure too
 * (the compiler reports what is wrong with them).
 */
export function expandedSize(pattern: string): number {
  const stack: Frame[] = [newFrame(0)];
  let top = stack[0]!;
  const atom = (size: number): void => {
    top.current += size;
    top.last = size;
  };
  const quantify = (size: number): void => {
    top.current += size - top.last;
    top.last = size;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === '\\' && pattern[i + 1] === 'Q') {
      // \Q...\E: literal text, one instruction per character.
      const close = pattern.indexOf('\\E', i + 2);
      const end = close < 0 ? pattern.length : close;
      for (let k = i + 2; k < end; k++) atom(1);
      i = close < 0 ? end : end + 2;
    } else if (c === '\\') {
      atom(1);
      i = escapeEnd(pattern, i);
    } else if (c === '[') {
      atom(1);
      i = classEnd(pattern, i);
    } else if (c === '(') {
      if (pattern[i + 1] === '?' && /^\(\?[-a-zA-Z]*\)/.test(pattern.slice(i, i + 16))) {
        // (?i): flags for the rest of the group, no group of its own.
        i = pattern.indexOf(')', i) + 1;
        continue;
      }
      const capture = pattern[i + 1] !== '?' || pattern[i + 2] === 'P' || pattern[i + 2] === '<' ? 2 : 0;
      stack.push((top = newFrame(capture)));
      i++;
    } else if (c === ')' && stack.length > 1) {
      const size = frameSize(stack.pop()!);
      top = stack[stack.length - 1]!;
      atom(size);
      i++;
    } else if (c === '|') {
      top.alternatives.push(top.current);
      top.current = 0;
      top.last = 0;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      quantify(top.last + 1);
      i += pattern[i + 1] === '?' ? 2 : 1;
    } else if (c === '{' && counted(pattern, i)) {
      const { end, max } = counted(pattern, i)!;
      quantify((max + 1) * (top.last + 1));
      i = end + (pattern[end] === '?' ? 1 : 0);
    } else {
      atom(1);
      i++;
    }
  }
  while (stack.length > 1) {
    const size = frameSize(stack.pop()!);
    top = stack[stack.length - 1]!;
    atom(size);
  }
  return frameSize(top) + PROGRAM_OVERHEAD;
}
