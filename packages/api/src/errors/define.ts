// An error catalog is a table of the failures a package can report, each with a stable
// `TG_*` code, a one-sentence message, the HTTP status when the failure is an answer to a
// request, and a hint that says how to fix it. Code, status and hint are part of the
// interface: logs and docs quote them, and docs/errors.md is kept equal to the catalogs by a
// test. Messages may hold `{name}` placeholders that `create()` fills in. It lives in the
// bottom package of the workspace (every other one imports it); @tollgate/kit re-exports it.

export interface ErrorDef {
  readonly code: `TG_${string}`;
  /** One sentence; `{name}` placeholders are filled by create(). */
  readonly message: string;
  /** How to fix it: what to change, or where to look. */
  readonly hint: string;
  /** The HTTP status when the failure is an answer to a request; absent for process errors. */
  readonly status?: number;
}

/** A thrown catalog error: its code, status and hint travel with it. */
export class CatalogError<C extends string = string> extends Error {
  readonly code: C;
  readonly hint: string;
  readonly status: number | undefined;
  constructor(code: C, message: string, details: { hint: string; status?: number; cause?: unknown }) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'CatalogError';
    this.code = code;
    this.hint = details.hint;
    this.status = details.status;
  }
}

export type Params = Readonly<Record<string, string | number>>;

export type ErrorEntry<D extends ErrorDef> = D & {
  /** The error, with the message's placeholders filled from `params`. */
  create(params?: Params, options?: { cause?: unknown }): CatalogError<D['code']>;
} & (D extends { readonly status: number } ? { /** What a client receives: the message. */ readonly body: string } : unknown);

export type Catalog<T extends Record<string, ErrorDef>> = { readonly [K in keyof T]: ErrorEntry<T[K]> };

const PLACEHOLDER = /\{(\w+)\}/g;

/** Fills `{name}` placeholders; a missing parameter stays visible rather than vanishing. */
export function formatMessage(message: string, params: Params = {}): string {
  return message.replace(PLACEHOLDER, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

/**
 * Declares a package's catalog. Refuses (at load, so a test catches it) a code that is not
 * `TG_` + upper-case words, a code used twice, an empty message or hint, and a status outside
 * 400..599.
 */
export function defineErrors<const T extends Record<string, ErrorDef>>(defs: T): Catalog<T> {
  const seen = new Set<string>();
  const out: Record<string, unknown> = {};
  for (const [key, def] of Object.entries(defs)) {
    if (!/^TG_[A-Z0-9]+(_[A-Z0-9]+)*$/.test(def.code)) throw new Error(`error ${key}: code ${def.code} is not TG_ followed by upper-case words`);
    if (seen.has(def.code)) throw new Error(`error ${key}: code ${def.code} is declared twice`);
    seen.add(def.code);
    if (!def.message.trim() || !def.hint.trim()) throw new Error(`error ${def.code}: message and hint must not be empty`);
    if (def.status !== undefined && !(Number.isInteger(def.status) && def.status >= 400 && def.status <= 599)) {
      throw new Error(`error ${def.code}: status ${def.status} is not an HTTP error status (400..599)`);
    }
    const entry = {
      ...def,
      ...(def.status !== undefined ? { body: def.message } : {}),
      create: (params?: Params, options?: { cause?: unknown }) =>
        new CatalogError(def.code, formatMessage(def.message, params), { hint: def.hint, status: def.status, cause: options?.cause }),
    };
    out[key] = Object.freeze(entry);
  }
  return Object.freeze(out) as Catalog<T>;
}

/** The entries of a catalog, for docs and tests. */
export function catalogEntries(catalog: Catalog<Record<string, ErrorDef>>): ErrorDef[] {
  return Object.values(catalog).map(({ code, message, hint, status }) => ({ code, message, hint, ...(status !== undefined ? { status } : {}) }));
}
