// A request as CEL variables, honouring the bounds the cost estimate assumed: an input an
// expression reads and that is over its declared bound is refused before anything is
// evaluated (the caller answers 431), rather than hidden or cut, which would let a client
// drop a rate limit descriptor by padding the header it is keyed on. Inputs no expression
// reads are not checked, so a route whose descriptors read llm.model only never refuses a
// request for its headers.
//
// The variables are Maps: @bufbuild/cel wraps a Map as it is, but copies a plain object into
// a new Map on every access, which made each `request.headers[k]` cost the whole header list.
import type { CelLimits } from '../limits.js';
import type { InputName } from './check.js';
import {
  MAX_ADDRESS_LENGTH,
  MAX_CLAIM_LENGTH,
  MAX_CONSUMER_CLAIMS,
  MAX_CONSUMER_LABEL_LENGTH,
  MAX_CONSUMER_LABELS,
  MAX_CONSUMER_NAME_LENGTH,
  MAX_HOST_LENGTH,
  MAX_METHOD_LENGTH,
  MAX_MODEL_LENGTH,
} from './surfaces.js';

export interface RequestInputs {
  readonly method: string;
  /** The normalised path, without the query string. */
  readonly path: string;
  /** The Host without its port. */
  readonly host: string;
  /** Lower-case names, as Node.js gives them; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  readonly sourceAddress: string;
  /** The model named by the request body, when read. */
  readonly model: string | null;
  /** `max_completion_tokens`, else `max_tokens`, of the request body (llm.maxTokens; 0 without). */
  readonly maxTokens?: number | null;
  /** Whether the request body asks for a stream (llm.stream). */
  readonly stream?: boolean;
  /**
   * Who is calling, once authenticated; null: nobody authenticated it (the expressions then
   * see name "", group "" and empty maps). The authenticators keep the fields within the
   * bounds of ./surfaces.ts; bindRequest checks them as it checks the request's own.
   */
  readonly consumer?: ConsumerInputs | null;
}

export interface ConsumerInputs {
  readonly name: string;
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
  readonly claims: Readonly<Record<string, string>> | null;
}

const NO_ENTRIES: ReadonlyMap<string, string> = new Map();
const entries = (o: Readonly<Record<string, string>> | null): ReadonlyMap<string, string> => (o ? new Map(Object.entries(o)) : NO_ENTRIES);
const NO_CONSUMER = new Map<string, unknown>([
  ['name', ''],
  ['group', ''],
  ['labels', NO_ENTRIES],
  ['claims', NO_ENTRIES],
]);

declare const made: unique symbol;
/** Variables for CompiledProgram.run(); made by bindRequest() only. */
export type CelBindings = { readonly [made]: true };

export type Bound =
  | { readonly ok: true; readonly bindings: CelBindings }
  /** `input` is over its bound: the request must not be evaluated. */
  | { readonly ok: false; readonly input: InputName; readonly problem: string };

/** Every input the programs (CelProgram of ./compile.ts, which imports this file) read. */
export function readsOf(programs: Iterable<{ readonly reads: ReadonlySet<InputName> }>): ReadonlySet<InputName> {
  const out = new Set<InputName>();
  for (const p of programs) for (const r of p.reads) out.add(r);
  return out;
}

const over = (input: InputName, problem: string): Bound => ({ ok: false, input, problem });

function checkText(input: InputName, value: string, max: number): Bound | null {
  return value.length > max ? over(input, `${value.length} characters, more than the ${max} an expression here assumes`) : null;
}

function checkEntries(input: InputName, o: Readonly<Record<string, string>> | null, maxEntries: number, maxLength: number): Bound | null {
  if (!o) return null;
  let n = 0;
  for (const k in o) {
    if (++n > maxEntries) return over(input, `more than the ${maxEntries} entries an expression here assumes`);
    const v = o[k]!;
    if (k.length > maxLength || v.length > maxLength) return over(input, `entry ${JSON.stringify(k.slice(0, 64))} is ${Math.max(k.length, v.length)} characters long, more than the ${maxLength} an expression here assumes`);
  }
  return null;
}

/** The consumer's fields the programs read, against the bounds of ./surfaces.ts. */
function checkConsumer(c: ConsumerInputs, reads: ReadonlySet<InputName>): Bound | null {
  const texts: [InputName, string][] = [
    ['consumer.name', c.name],
    ['consumer.group', c.group ?? ''],
  ];
  for (const [input, value] of texts) {
    const refused = reads.has(input) ? checkText(input, value, MAX_CONSUMER_NAME_LENGTH) : null;
    if (refused) return refused;
  }
  return (
    (reads.has('consumer.labels') ? checkEntries('consumer.labels', c.labels, MAX_CONSUMER_LABELS, MAX_CONSUMER_LABEL_LENGTH) : null) ??
    (reads.has('consumer.claims') ? checkEntries('consumer.claims', c.claims, MAX_CONSUMER_CLAIMS, MAX_CLAIM_LENGTH) : null)
  );
}

function headerMap(headers: RequestInputs['headers'], limits: CelLimits): Map<string, string> | Bound {
  const out = new Map<string, string>();
  const max = limits.maxHeaderLength;
  for (const name in headers) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const value = typeof raw === 'string' ? raw : raw.join(', ');
    if (name.length > max || value.length > max) return over('request.headers', `header ${JSON.stringify(name.slice(0, 64))} is ${Math.max(name.length, value.length)} characters long, more than the ${max} an expression here assumes (cel.maxHeaderLength)`);
    out.set(name, value);
    if (out.size > limits.maxHeaders) return over('request.headers', `more than the ${limits.maxHeaders} headers an expression here assumes (cel.maxHeaders)`);
  }
  return out;
}

const NO_HEADERS: ReadonlyMap<string, string> = new Map();

/** The variables of a request for programs that read `reads`; or which input is over its bound. */
export function bindRequest(req: RequestInputs, reads: ReadonlySet<InputName>, limits: CelLimits): Bound {
  const model = req.model ?? '';
  const checks: [InputName, string, number][] = [
    ['request.method', req.method, MAX_METHOD_LENGTH],
    ['request.path', req.path, limits.maxPathLength],
    ['request.host', req.host, MAX_HOST_LENGTH],
    ['source.address', req.sourceAddress, MAX_ADDRESS_LENGTH],
    ['llm.model', model, MAX_MODEL_LENGTH],
  ];
  for (const [input, value, max] of checks) {
    const refused = reads.has(input) ? checkText(input, value, max) : null;
    if (refused) return refused;
  }
  if (req.consumer) {
    const refused = checkConsumer(req.consumer, reads);
    if (refused) return refused;
  }
  let headers: ReadonlyMap<string, string> = NO_HEADERS;
  if (reads.has('request.headers')) {
    const h = headerMap(req.headers, limits);
    if (!(h instanceof Map)) return h;
    headers = h;
  }
  const bindings = {
    request: new Map<string, unknown>([
      ['method', req.method],
      ['path', req.path],
      ['host', req.host],
      ['headers', headers],
    ]),
    source: new Map([['address', req.sourceAddress]]),
    llm: new Map<string, unknown>([
      ['model', model],
      ['maxTokens', BigInt(req.maxTokens ?? 0)],
      ['stream', req.stream ?? false],
    ]),
    consumer: req.consumer
      ? new Map<string, unknown>([
          ['name', req.consumer.name],
          ['group', req.consumer.group ?? ''],
          ['labels', entries(req.consumer.labels)],
          ['claims', entries(req.consumer.claims)],
        ])
      : NO_CONSUMER,
  };
  return { ok: true, bindings: bindings as unknown as CelBindings };
}
