// The body edits of a transformation applied to a JSON object body. Only the top-level members
// an edit reaches are written anew (each once: a key the client repeated is written once, so a
// backend that keeps the first of duplicate keys sees the edited value too); every other member
// goes upstream byte for byte as the client wrote it. Integers beyond 2^53 in the members
// written anew keep their digits (JSON.rawJSON). Then the body is parsed again, as
// readLlmRequest parses a body, so the model, max_tokens and prompt the rate limits and the
// meter read are the transformed body's.
import { parse, type LlmRequest } from '../llm/request-body.js';
import { OPEN_OBJECT, scanMembers } from '../llm/json-scan.js';

const COMMA = Buffer.from(',');

/** A body edit with its value computed: `value` undefined removes the field. */
export interface ResolvedBodyEdit {
  readonly segments: readonly string[];
  readonly value?: unknown;
}

type Json = Record<string, unknown>;

const json = JSON as unknown as { rawJSON(text: string): object; isRawJSON(value: unknown): boolean };
const rawJSON = (text: string): object => json.rawJSON(text);
const isRawJSON = (value: unknown): boolean => json.isRawJSON(value);

/** Integers JSON.parse would round are kept as the client wrote them. */
function exact(_key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source) ? rawJSON(context.source) : value;
}

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v) && !isRawJSON(v);

function setIn(members: Map<string, unknown>, segments: readonly string[], value: unknown): void {
  const [top, ...rest] = segments as [string, ...string[]];
  if (!rest.length) {
    members.set(top, value);
    return;
  }
  // A member on the way that is not an object (absent, a string, an array) is replaced by one.
  let node = members.get(top);
  if (!isObject(node)) members.set(top, (node = {}));
  let at = node as Json;
  for (const s of rest.slice(0, -1)) {
    if (!isObject(at[s])) at[s] = {};
    at = at[s] as Json;
  }
  at[rest[rest.length - 1]!] = value;
}

function removeIn(members: Map<string, unknown>, segments: readonly string[]): void {
  const [top, ...rest] = segments as [string, ...string[]];
  if (!rest.length) {
    members.delete(top);
    return;
  }
  let at = members.get(top);
  for (const s of rest.slice(0, -1)) {
    if (!isObject(at)) return;
    at = at[s];
  }
  if (isObject(at)) delete at[rest[rest.length - 1]!];
}

/**
 * Strips the include_usage the gateway added (llm/request-body.ts) before the edits: they act
 * on what the client sent, and the body is then asked for usage again only if it still needs it.
 */
function withoutInjectedUsage(members: Map<string, unknown>): void {
  const opts = members.get('stream_options');
  if (!isObject(opts)) return;
  delete opts.include_usage;
  if (!Object.keys(opts).length) members.delete('stream_options');
}

/**
 * The body with the edits made (sets in order, then removes). `askUsage`: a metered route,
 * where a stream that does not ask for usage is made to (llm/request-body.ts).
 */
export type ReadBody = LlmRequest & { readonly body: Buffer };

export function editBody(llm: ReadBody, edits: readonly ResolvedBodyEdit[], askUsage: boolean): ReadBody {
  const raw = llm.body;
  const { members, close } = scanMembers(raw);
  const touched = new Set(edits.map((e) => e.segments[0]!));
  if (llm.injectedUsage) touched.add('stream_options');
  // The current value of each member an edit reaches: its last occurrence, as JSON.parse reads it.
  const values = new Map<string, unknown>();
  for (const m of members) if (touched.has(m.key)) values.set(m.key, JSON.parse(raw.subarray(m.start, m.end).toString('utf8'), exact));
  if (llm.injectedUsage) withoutInjectedUsage(values);
  for (const e of edits) if (e.value !== undefined) setIn(values, e.segments, e.value);
  for (const e of edits) if (e.value === undefined) removeIn(values, e.segments);
  const parts: Buffer[] = [];
  const written = new Set<string>();
  const lastOf = new Map(members.map((m, i) => [m.key, i]));
  members.forEach((m, i) => {
    if (!touched.has(m.key)) parts.push(raw.subarray(m.keyStart, m.end));
    else if (lastOf.get(m.key) === i && values.has(m.key)) {
      parts.push(Buffer.from(`${JSON.stringify(m.key)}:${JSON.stringify(values.get(m.key))}`));
      written.add(m.key);
    }
  });
  for (const [key, value] of values) if (!written.has(key)) parts.push(Buffer.from(`${JSON.stringify(key)}:${JSON.stringify(value)}`));
  const body = Buffer.concat([raw.subarray(0, raw.indexOf(OPEN_OBJECT) + 1), ...parts.flatMap((p, i) => (i ? [COMMA, p] : [p])), raw.subarray(close)]);
  // parse() keeps the bytes it is given as the body.
  return parse(body, askUsage) as ReadBody;
}
