// TransformationConfig to TransformationIR: header names in lower case, lists made explicit,
// and each expression that may hold a credential (the value of a credential header, text that
// looks like a key) wrapped as a Secret, so /config_dump and the trace print "[redacted]". The
// expressions were compiled within their cost budget by checkTransformation (./check.ts).
import { Secret, isSensitiveHeader } from '../secret.js';
import { looksLikeSecret } from '../secret-text.js';
import type { BodyEditsIR, HeaderEditsIR, TransformationConfig, TransformationIR, TransformExpressionIR } from './transformation.js';

type HeaderEditsConfig = NonNullable<NonNullable<TransformationConfig['request']>['headers']>;
type HeaderEditConfig = NonNullable<HeaderEditsConfig['set']>[number];

/** The expression as the IR holds it: a Secret when `credential` or when its text looks like one. */
export function transformExpression(text: string, credential = false): TransformExpressionIR {
  return credential || looksLikeSecret(text) ? new Secret(text) : text;
}

/** The text of an expression of the IR (for compiling it; never for printing). */
export function expressionText(e: TransformExpressionIR): string {
  return typeof e === 'string' ? e : e.reveal();
}

function headerEdit(h: HeaderEditConfig) {
  const name = h.name.toLowerCase();
  return { name, value: transformExpression(h.value, isSensitiveHeader(name)), when: h.when === undefined ? null : transformExpression(h.when) };
}

function headerEdits(h: HeaderEditsConfig | undefined): HeaderEditsIR | null {
  if (!h) return null;
  return { set: (h.set ?? []).map(headerEdit), add: (h.add ?? []).map(headerEdit), remove: (h.remove ?? []).map((n) => n.toLowerCase()) };
}

function bodyEdits(b: NonNullable<TransformationConfig['request']>['body']): BodyEditsIR | null {
  if (!b) return null;
  return {
    set: (b.set ?? []).map((e) => ({ path: e.path, value: transformExpression(e.value), when: e.when === undefined ? null : transformExpression(e.when) })),
    remove: [...(b.remove ?? [])],
  };
}

export function toTransformationIR(config: TransformationConfig): TransformationIR {
  return {
    request: { headers: headerEdits(config.request?.headers), body: bodyEdits(config.request?.body) },
    response: { headers: headerEdits(config.response?.headers) },
  };
}
