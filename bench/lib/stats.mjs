// Small helpers the bench scripts share: the median of a round's figures, and an integer
// command-line option checked against its lower bound.

/** The median of the finite numbers of `xs` (nulls and NaN left out); null when there are none. */
export function median(xs) {
  const s = xs.filter((x) => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** `values[name]` (from util.parseArgs) as an integer >= `min`, or an error naming the option. */
export function intOption(values, name, min) {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got '${values[name]}'`);
  return n;
}
