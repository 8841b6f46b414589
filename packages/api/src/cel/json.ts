// A CEL value as the JSON a transformation writes into a request body, and as the text of a
// header value. Integers are written exactly (as JSON.rawJSON, so 2^63-1 stays 2^63-1), maps
// with any key type become objects (keys as text), bytes, NaN and the infinities are refused:
// JSON has no form for them. The value's size is what the expression's cost estimate allowed.
import { cel } from './library.js';

/** A value JSON.stringify writes as JSON: integers beyond 2^53 held as raw JSON text. */
export type JsonWritable = null | boolean | number | string | object;

export type JsonOutcome = { readonly ok: true; readonly value: JsonWritable } | { readonly ok: false; readonly reason: string };

const rawJSON = (text: string): object => (JSON as unknown as { rawJSON(text: string): object }).rawJSON(text);

class NoJsonForm extends Error {}

function refused(reason: string): never {
  throw new NoJsonForm(reason);
}

function write(v: unknown): JsonWritable {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : rawJSON(v.toString());
  if (typeof v === 'number') return Number.isFinite(v) ? v : refused(`${v} has no JSON form`);
  const lib = cel();
  if (lib.isCelUint(v)) return write(v.value);
  if (v instanceof Uint8Array) return refused('bytes have no JSON form; write string(b) or a string');
  if (lib.isCelList(v)) return [...v].map(write);
  if (lib.isCelMap(v)) {
    const out: Record<string, JsonWritable> = {};
    for (const [k, x] of v) out[String(lib.isCelUint(k) ? k.value : k)] = write(x);
    return out;
  }
  return refused(`a value of type ${typeof v} has no JSON form`);
}

/** What an evaluation gave (CelOutcome's value) as a JSON value, or why it has none. */
export function celToJson(value: unknown): JsonOutcome {
  try {
    return { ok: true, value: write(value) };
  } catch (err) {
    if (err instanceof NoJsonForm) return { ok: false, reason: err.message };
    throw err;
  }
}

/** A scalar (string, number, bool) as header text; null for any other value. */
export function celToText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  return cel().isCelUint(value) ? value.value.toString() : null;
}
