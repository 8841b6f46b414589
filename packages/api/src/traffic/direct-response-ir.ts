// A directResponse policy to the DirectResponseIR the proxy sends: the body serialized once
// (text as written, JSON compact), header names lower-cased, credential headers wrapped so no
// dump prints them; and the checks the schema cannot make (body bytes, JSON depth, reserved
// and repeated headers, no body where the status has none).
import { isSensitiveHeader, Secret } from '../secret.js';
import { checkUnique, joinPath, type Problem } from '../validation-error.js';
import { BODYLESS_STATUSES, DIRECT_RESPONSE_BOUNDS, RESERVED_RESPONSE_HEADERS, type DirectResponseConfig, type DirectResponseIR } from './direct-response.js';

export type { DirectResponseIR };

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json';

/** Call once checkDirectResponse found nothing: the JSON body is then within its bounds. */
export function toDirectResponseIR(c: DirectResponseConfig): DirectResponseIR {
  const headers = (c.headers ?? []).map((h) => {
    const name = h.name.toLowerCase();
    return { name, value: isSensitiveHeader(name) ? new Secret(h.value) : h.value };
  });
  const b = c.body;
  const body = !b ? null : b.json !== undefined ? { contentType: JSON_TYPE, text: JSON.stringify(b.json) } : { contentType: TEXT, text: b.text ?? '' };
  return { status: c.status, headers, body };
}

/** How deep `value` nests, counted without recursion; stops at `limit` + 1. */
function depth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > deepest) deepest = d;
    if (deepest > limit) return deepest;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

export function checkDirectResponse(c: DirectResponseConfig, path: string, out: Problem[]): void {
  const { maxBodyBytes, maxJsonDepth } = DIRECT_RESPONSE_BOUNDS;
  const headersAt = joinPath(path, 'headers');
  c.headers?.forEach((h, i) => {
    const name = h.name.toLowerCase();
    if ((RESERVED_RESPONSE_HEADERS as readonly string[]).includes(name))
      out.push({ path: joinPath(joinPath(headersAt, i), 'name'), message: `${name} is set by the proxy (the body's length and the connection are its own); remove it` });
  });
  if (c.headers) checkUnique(c.headers, (h) => h.name.toLowerCase(), (i) => joinPath(joinPath(headersAt, i), 'name'), 'header', out);
  const b = c.body;
  if (!b) return;
  const bodyAt = joinPath(path, 'body');
  if ((BODYLESS_STATUSES as readonly number[]).includes(c.status)) out.push({ path: bodyAt, message: `a ${c.status} answer has no body; remove body or choose another status` });
  if ((b.text === undefined) === (b.json === undefined)) {
    out.push({ path: bodyAt, message: 'set exactly one of text or json' });
    return;
  }
  if (b.text !== undefined) {
    const bytes = Buffer.byteLength(b.text);
    if (bytes > maxBodyBytes) out.push({ path: joinPath(bodyAt, 'text'), message: `is ${bytes} bytes as UTF-8, more than ${maxBodyBytes}` });
    return;
  }
  const json = b.json;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    out.push({ path: joinPath(bodyAt, 'json'), message: 'must be a JSON object, e.g. {error: {message: "gone", code: "deprecated"}}' });
    return;
  }
  const d = depth(json, maxJsonDepth);
  if (d > maxJsonDepth) {
    out.push({ path: joinPath(bodyAt, 'json'), message: `nests more than ${maxJsonDepth} levels deep` });
    return;
  }
  const bytes = Buffer.byteLength(JSON.stringify(json));
  if (bytes > maxBodyBytes) out.push({ path: joinPath(bodyAt, 'json'), message: `is ${bytes} bytes serialized, more than ${maxBodyBytes}` });
}
