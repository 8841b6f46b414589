// Validation problems carry the JSON path of the bad field, the value found and what was
// expected, so the message alone tells the user where to look and what to write instead.
import { API_ERRORS } from './errors/catalog.js';

export interface Problem {
  /** Dotted path with array indices, e.g. `binds[0].listeners[1].routes[2].backends[0].host`. */
  readonly path: string;
  readonly message: string;
}

export class ValidationError extends Error {
  readonly code = API_ERRORS.configInvalid.code;
  readonly hint = API_ERRORS.configInvalid.hint;
  constructor(
    readonly subject: string,
    readonly problems: readonly Problem[],
  ) {
    super(`${subject} is invalid:\n${problems.map((p) => `  - ${p.path || '(root)'}: ${p.message}`).join('\n')}`);
    this.name = 'ValidationError';
  }
}

export function joinPath(base: string, key: string | number): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  if (!/^[A-Za-z_$][\w$-]*$/.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base ? `${base}.${key}` : key;
}

/** A short rendering of a value for an error message. */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? typeof value;
  } catch {
    text = typeof value;
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Reports a problem for each value seen before at another index. */
export function checkUnique<T>(items: readonly T[], key: (item: T) => string, path: (i: number) => string, what: string, out: Problem[]): void {
  const first = new Map<string, number>();
  items.forEach((item, i) => {
    const k = key(item);
    const prev = first.get(k);
    if (prev !== undefined) out.push({ path: path(i), message: `duplicate ${what} ${show(k)} (also at index ${prev}); ${what}s must be unique` });
    else first.set(k, i);
  });
}
