// ApiKeyConfig to ApiKeyIR: the consumers and their keys, read from a file (standalone) or from
// Secrets (cluster), checked entry by entry, and reduced to SHA-256 digests: nothing after this
// holds a key. Every problem names the entry (its index in the file, or its Secret) and never
// quotes a key.
import { createHash } from 'node:crypto';
import { MAX_CONSUMER_LABEL_LENGTH, MAX_CONSUMER_LABELS, MAX_CONSUMER_NAME_LENGTH } from '../cel/surfaces.js';
import { parseConfigText } from '../parse-text.js';
import { Secret } from '../secret.js';
import { joinPath, show, ValidationError, type Problem } from '../validation-error.js';
import { API_KEY_BOUNDS, type ApiKeyConfig, type ApiKeyConsumerIR, type ApiKeyIR } from './api-key.js';
import { CONTROL_CHARACTER as CONTROL, toLocation, type CredentialLocationIR } from './refs.js';
import type { PolicySources, SourceObject } from './sources.js';

export type { ApiKeyIR };

/** Where a key is read when keyFrom is not set: what OpenAI-style and Anthropic-style clients send. */
export const DEFAULT_KEY_FROM: readonly CredentialLocationIR[] = [{ type: 'Bearer' }, { type: 'Header', name: 'x-api-key' }];

const ENTRY_FIELDS = new Set(['key', 'consumer', 'group', 'labels']);
/** Visible ASCII: a key travels in a header, a cookie or a query parameter as it is. */
const KEY_CHARS = /^[\x21-\x7e]+$/;

/** One consumer as written (a file entry or a Secret), before it is checked. */
interface RawEntry {
  /** For messages: `entry 3` or `Secret team-a/key-1`. */
  readonly what: string;
  /** JSON path of the entry (file) or of the reference (Secrets). */
  readonly at: string;
  /** What is wrong with its shape (reported in entry order with the others). */
  readonly invalid?: string;
  readonly key: unknown;
  readonly consumer: unknown;
  readonly group: unknown;
  readonly labels: unknown;
}

export function toApiKeyIR(config: ApiKeyConfig, at: string, sources: PolicySources, problems: Problem[]): ApiKeyIR | null {
  const before = problems.length;
  const keyFrom = toKeyFrom(config, at, problems);
  const raw = config.file !== undefined ? fromFile(config.file, at, sources, problems) : fromSecrets(config, at, sources, problems);
  if (raw === null) return null;
  const consumers = checkEntries(raw, problems);
  return problems.length > before ? null : { keyFrom, consumers };
}

function toKeyFrom(config: ApiKeyConfig, at: string, problems: Problem[]): readonly CredentialLocationIR[] {
  if (!config.keyFrom) return DEFAULT_KEY_FROM;
  const seen = new Map<string, number>();
  return config.keyFrom.map((l, i) => {
    const loc = toLocation(l);
    const p = joinPath(joinPath(at, 'keyFrom'), i);
    if (loc.type === 'Header' && loc.name === 'authorization') problems.push({ path: `${p}.name`, message: 'is the Authorization header: use {type: Bearer}, which reads its Bearer credential' });
    if (loc.type === 'Header' && loc.name === 'cookie') problems.push({ path: `${p}.name`, message: 'is the Cookie header: use {type: Cookie, name: <cookie>}, which reads one cookie' });
    const id = loc.type === 'Bearer' ? 'Bearer' : `${loc.type} ${loc.name}`;
    const other = seen.get(id);
    if (other !== undefined) problems.push({ path: p, message: `names the same place as keyFrom[${other}] (${id}); list each place once` });
    seen.set(id, i);
    return loc;
  });
}

/** The entries of a standalone key file: a YAML or JSON list of {key, consumer, group, labels}. */
function fromFile(file: string, at: string, sources: PolicySources, problems: Problem[]): RawEntry[] | null {
  const read = sources.text(at, { file });
  if (!read.ok) {
    problems.push(read.problem);
    return null;
  }
  const { origin, text } = read.value;
  const fileAt = joinPath(at, 'file');
  let value: unknown;
  try {
    value = parseConfigText(text, origin, 'is empty: expected a list of {key, consumer, group, labels}; write [] for no keys');
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    for (const p of err.problems) problems.push({ path: fileAt, message: `${origin} ${p.message}` });
    return null;
  }
  if (!Array.isArray(value)) {
    problems.push({ path: fileAt, message: `${origin} holds ${value === null ? 'null' : typeof value}; expected a list of {key, consumer, group, labels}` });
    return null;
  }
  if (value.length > API_KEY_BOUNDS.maxKeys) {
    problems.push({ path: fileAt, message: `${origin} has ${value.length} entries, more than the ${API_KEY_BOUNDS.maxKeys} an apiKey policy may hold; split the consumers across routes or policies` });
    return null;
  }
  const entries: RawEntry[] = [];
  value.forEach((e: unknown, i) => {
    const what = `${origin} entry ${i}`;
    const invalid = (why: string) => entries.push({ what, at: fileAt, invalid: why, key: undefined, consumer: undefined, group: undefined, labels: undefined });
    if (e === null || typeof e !== 'object' || Array.isArray(e)) return invalid(`is ${Array.isArray(e) ? 'a list' : show(e)}; expected {key, consumer, group, labels}`);
    const o = e as Record<string, unknown>;
    const unknown = Object.keys(o).find((k) => !ENTRY_FIELDS.has(k));
    if (unknown !== undefined) return invalid(`has unknown field ${show(unknown)}; an entry has key, consumer, group and labels`);
    entries.push({ what, at: fileAt, key: o.key, consumer: o.consumer, group: o.group, labels: o.labels });
  });
  return entries;
}

/** The entries of Secrets (cluster): one consumer per Secret, data keys key, consumer, group, labels. */
function fromSecrets(config: ApiKeyConfig, at: string, sources: PolicySources, problems: Problem[]): RawEntry[] | null {
  if (!config.secretRefs && !config.secretSelector) {
    problems.push({ path: at, message: 'names no keys: set secretRefs or secretSelector (cluster), or file (standalone)' });
    return null;
  }
  const refsAt = config.secretRefs ? joinPath(at, 'secretRefs') : joinPath(at, 'secretSelector');
  const read = sources.secrets(refsAt, config.secretRefs ?? [], config.secretSelector?.matchLabels ?? null);
  if (!read.ok) {
    problems.push(read.problem);
    return null;
  }
  if (read.value.length > API_KEY_BOUNDS.maxKeys) {
    problems.push({ path: refsAt, message: `selects ${read.value.length} Secrets, more than the ${API_KEY_BOUNDS.maxKeys} an apiKey policy may hold` });
    return null;
  }
  return read.value.map((s) => {
    const labels = secretLabels(s);
    const entry = { what: s.origin, at: refsAt, key: s.data.key, consumer: s.data.consumer ?? s.name, group: s.data.group };
    return labels.ok ? { ...entry, labels: labels.value } : { ...entry, labels: null, invalid: labels.problem };
  });
}

/** A Secret's `labels` data: a JSON object of strings (checked with the others' labels). */
function secretLabels(s: SourceObject): Checked<unknown> {
  const text = s.data.labels;
  if (text === undefined) return ok(null);
  try {
    return ok(JSON.parse(text) as unknown);
  } catch {
    return no('data key "labels" is not JSON; write a JSON object of strings, e.g. {"tier":"gold"}');
  }
}

type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };
const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const no = (problem: string): Checked<never> => ({ ok: false, problem });

function checkEntries(raw: readonly RawEntry[], problems: Problem[]): ApiKeyConsumerIR[] {
  const byDigest = new Map<string, string>();
  const out: ApiKeyConsumerIR[] = [];
  for (const e of raw) {
    if (e.invalid !== undefined) {
      // A Secret names itself and a colon; a file entry reads on ("entry 3 is ...").
      problems.push({ path: e.at, message: `${e.what}${e.what.startsWith('Secret') ? ':' : ''} ${e.invalid}` });
      continue;
    }
    const key = checkKey(e.key);
    const consumer = checkName(e.consumer, 'consumer', true);
    const group = checkName(e.group, 'group', false);
    const labels = checkLabels(e.labels);
    if (!key.ok || !consumer.ok || !group.ok || !labels.ok) {
      const failed = [key, consumer, group, labels].find((c) => !c.ok) as { problem: string };
      problems.push({ path: e.at, message: `${e.what}: ${failed.problem}` });
      continue;
    }
    const digest = createHash('sha256').update(key.value).digest('hex');
    const twin = byDigest.get(digest);
    if (twin !== undefined) {
      problems.push({ path: e.at, message: `${e.what}: key is the same as the key of ${twin}; every key must be different (a consumer may have several keys)` });
      continue;
    }
    byDigest.set(digest, e.what);
    out.push({ digest: new Secret(digest), id: digest.slice(0, 8), consumer: consumer.value as string, group: group.value, labels: labels.value });
  }
  return out;
}

/** The key, or what is wrong with it (never the key itself). */
function checkKey(key: unknown): Checked<string> {
  const { minKeyLength: min, maxKeyLength: max } = API_KEY_BOUNDS;
  if (key === undefined || key === null) return no('key is missing');
  if (typeof key !== 'string') return no(`key is ${typeof key === 'number' ? 'a number' : typeof key}; write it as a string (quote it in YAML)`);
  if (key.length === 0) return no('key is empty');
  if (key.length < min || key.length > max) return no(`key is ${key.length} characters; a key has ${min} to ${max}`);
  if (!KEY_CHARS.test(key)) return no('key has a character that is not visible ASCII (a space, a control character or non-ASCII); keys travel in headers, cookies and query parameters as written');
  return ok(key);
}

function checkName(v: unknown, field: string, required: boolean): Checked<string | null> {
  if (v === undefined || v === null) return required ? no(`${field} is missing`) : ok(null);
  if (typeof v !== 'string') return no(`${field} is ${show(v)}; expected a string`);
  if (v.length === 0 || v.length > MAX_CONSUMER_NAME_LENGTH) return no(`${field} ${show(v)} has ${v.length} characters; expected 1 to ${MAX_CONSUMER_NAME_LENGTH}`);
  if (CONTROL.test(v)) return no(`${field} ${show(v)} has a control character`);
  return ok(v);
}

function checkLabels(v: unknown): Checked<Record<string, string>> {
  if (v === undefined || v === null) return ok({});
  if (typeof v !== 'object' || Array.isArray(v)) return no(`labels is ${show(v)}; expected an object of strings, e.g. {tier: gold}`);
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_CONSUMER_LABELS) return no(`labels has ${entries.length} entries, more than ${MAX_CONSUMER_LABELS}`);
  const out: Record<string, string> = {};
  for (const [k, val] of entries) {
    if (k.length === 0 || k.length > API_KEY_BOUNDS.maxLabelNameLength || CONTROL.test(k)) return no(`label name ${show(k)} must be 1 to ${API_KEY_BOUNDS.maxLabelNameLength} characters without control characters`);
    if (typeof val !== 'string') return no(`label ${show(k)} is ${show(val)}; label values are strings (quote numbers and booleans in YAML)`);
    if (val.length > MAX_CONSUMER_LABEL_LENGTH || CONTROL.test(val)) return no(`label ${show(k)} must be at most ${MAX_CONSUMER_LABEL_LENGTH} characters without control characters`);
    out[k] = val;
  }
  return ok(out);
}
