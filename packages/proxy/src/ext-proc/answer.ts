// What a processor's answer to one phase asks, checked before anything of it applies: the
// answer must be for the phase sent (or an immediate response); header names must be HTTP
// tokens and values free of control characters (auth/ext-authz-headers.ts, the same rules as
// an authorization service's); counts and sizes stay within EXT_PROC_BOUNDS. An answer that
// breaks one is a bad answer as a whole (failure reason bad_response or too_large).
import { EXT_PROC_BOUNDS } from '@tollgate/api';
import type { HeaderValueOption } from '../auth/ext-authz-proto.js';
import { ServiceFailure, type AppendAction, type HeaderMutation } from '../auth/ext-authz-answer.js';
import { checkedName, checkedValue, isReserved } from '../auth/ext-authz-headers.js';
import type { CommonResponse, HeaderMutationMessage, Phase, ProcessingResponse } from './proto.js';
import { ExtProcFailure } from './stream.js';

export interface HeaderEdits {
  /** In order, reserved names (framing, pseudo-headers) left out. */
  readonly set: readonly HeaderMutation[];
  readonly remove: readonly string[];
}

export type PhaseAnswer =
  | { readonly kind: 'continue'; readonly headers: HeaderEdits; readonly body: Buffer | null }
  | { readonly kind: 'immediate'; readonly status: number; readonly headers: HeaderEdits; readonly body: Buffer; readonly details: string };

const ACTIONS: ReadonlySet<string> = new Set<AppendAction>(['APPEND_IF_EXISTS_OR_ADD', 'ADD_IF_ABSENT', 'OVERWRITE_IF_EXISTS_OR_ADD', 'OVERWRITE_IF_EXISTS']);
const NONE: HeaderEdits = { set: [], remove: [] };

function edits(m: HeaderMutationMessage | null, where: string): HeaderEdits {
  if (!m) return NONE;
  const n = m.set_headers.length + m.remove_headers.length;
  if (n > EXT_PROC_BOUNDS.maxHeaderMutations) throw new ExtProcFailure('too_large', `${where}: ${n} header mutations, more than ${EXT_PROC_BOUNDS.maxHeaderMutations}`);
  try {
    const set = m.set_headers.map((o: HeaderValueOption) => {
      const name = checkedName(o.header?.key ?? '', where);
      const raw = o.header?.raw_value;
      const value = checkedValue(name, raw?.length ? raw.toString('latin1') : (o.header?.value ?? ''), where);
      // The deprecated append flag wins when set (Envoy's rule); an unknown action overwrites.
      const action: AppendAction = o.append ? (o.append.value ? 'APPEND_IF_EXISTS_OR_ADD' : 'OVERWRITE_IF_EXISTS_OR_ADD') : ACTIONS.has(o.append_action) ? o.append_action : 'OVERWRITE_IF_EXISTS_OR_ADD';
      return { name, value, action };
    });
    const remove = m.remove_headers.map((r) => checkedName(r, where));
    // The proxy frames the message and owns the pseudo-headers: a processor does not change them.
    return { set: set.filter((h) => !isReserved(h.name)), remove: remove.filter((r) => !isReserved(r)) };
  } catch (err) {
    if (err instanceof ServiceFailure) throw new ExtProcFailure('bad_response', err.message);
    throw err;
  }
}

function body(r: CommonResponse | null, maxBytes: number, where: string): Buffer | null {
  const m = r?.body_mutation;
  if (!m) return null;
  if (m.clear_body) return Buffer.alloc(0);
  if (m.body === undefined) return null;
  if (m.body.length > maxBytes) throw new ExtProcFailure('too_large', `${where}: a body of ${m.body.length} bytes, more than ${maxBytes}`);
  return m.body;
}

/** `bodyBound`: the most bytes a replaced body may have in this phase. */
export function readAnswer(res: ProcessingResponse, phase: Phase, bodyBound: number): PhaseAnswer {
  const immediate = res.immediate_response;
  if (immediate) {
    const code = Number(immediate.status?.code ?? 0);
    // Envoy answers 200 for an immediate response without a status.
    const status = code === 0 ? 200 : code;
    if (!Number.isInteger(status) || status < 200 || status > 599) throw new ExtProcFailure('bad_response', `immediate_response: status ${code} is not from 200 to 599`);
    if (immediate.body.length > EXT_PROC_BOUNDS.maxImmediateBodyBytes) throw new ExtProcFailure('too_large', `immediate_response: a body of ${immediate.body.length} bytes, more than ${EXT_PROC_BOUNDS.maxImmediateBodyBytes}`);
    const headers = edits(immediate.headers, 'immediate_response.headers');
    return { kind: 'immediate', status, headers: { set: headers.set.filter((h) => !h.name.startsWith('x-tollgate-')), remove: [] }, body: immediate.body, details: immediate.details.slice(0, 256) };
  }
  const answer = res[phase];
  if (!answer) {
    const got = (['request_headers', 'response_headers', 'request_body', 'response_body'] as const).find((p) => res[p]) ?? 'nothing';
    throw new ExtProcFailure('bad_response', `answered ${got} to ${phase}`);
  }
  const common = answer.response;
  const headers = edits(common?.header_mutation ?? null, `${phase}.response.header_mutation`);
  // A headers phase does not replace the body (Envoy's CONTINUE_AND_REPLACE is not supported).
  const replaced = phase.endsWith('_body') ? body(common, bodyBound, `${phase}.response.body_mutation`) : null;
  return { kind: 'continue', headers, body: replaced };
}

function flat(v: string | string[] | number | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v === undefined ? undefined : String(v);
}

/** Applies the edits to `headers` in place: removals first, then each set in order (Envoy's order). */
export function applyEdits(headers: Record<string, string | string[] | number | undefined>, e: HeaderEdits): void {
  for (const name of e.remove) if (headers[name] !== undefined) delete headers[name];
  for (const { name, value, action } of e.set) {
    const existing = flat(headers[name]);
    if (action === 'APPEND_IF_EXISTS_OR_ADD') headers[name] = existing === undefined ? value : `${existing}, ${value}`;
    else if (action === 'ADD_IF_ABSENT') {
      if (existing === undefined) headers[name] = value;
    } else if (action === 'OVERWRITE_IF_EXISTS') {
      if (existing !== undefined) headers[name] = value;
    } else headers[name] = value;
  }
}

/** Names the edits touch, for the trace. */
export function editedNames(e: HeaderEdits): string[] {
  return [...new Set([...e.remove, ...e.set.map((h) => h.name)])];
}
