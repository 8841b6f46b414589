// authorization: Allow and Deny rules in CEL over the request as the client sent it, the
// consumer the authentication kinds before it established, and an LLM request's model. Each
// rule is compiled by compileCel on the `authorization` surface under the snapshot's bounds
// (its cost estimated and within cel.maxCost), and evaluated on bindRequest()'s variables,
// which refuse a request whose inputs are over those bounds (431) before anything runs.
//
// The rules are two ORs with CEL's error semantics (a true operand wins over an error), so
// their order never changes the decision: a true Deny rule refuses; otherwise a Deny rule
// that failed refuses (fail closed: it might have been true); otherwise a true Allow rule
// lets the request through; otherwise an Allow rule that failed refuses (reason `error`),
// and with none failed, Allow rules that exist refuse (`not_allowed`).
import { bindRequest, compileCel, readsOf, type AuthorizationIR, type CelBindings, type CelProgram, type EvaluationLimits } from '@tollgate/api';
import { ERRORS } from '../errors.js';
import type { AuthCheck, AuthDenial, AuthReason, AuthRequest, AuthVerdict } from './types.js';

interface CompiledRule {
  readonly name: string;
  readonly program: CelProgram;
}

/** A rule's expression is not usable (validation refuses it first; a snapshot that skipped it fails here). */
export class AuthorizationConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthorizationConfigError';
  }
}

function compileRules(ir: AuthorizationIR, limits: EvaluationLimits): { deny: CompiledRule[]; allow: CompiledRule[] } {
  const deny: CompiledRule[] = [];
  const allow: CompiledRule[] = [];
  let total = 0;
  ir.rules.forEach((r, i) => {
    const c = compileCel(r.expression, 'authorization', limits);
    if (!c.ok) throw new AuthorizationConfigError(`authorization.rules[${i}] (${r.name}): expression ${JSON.stringify(r.expression)}: ${c.problem}`);
    total += c.value.cost;
    (r.action === 'Deny' ? deny : allow).push({ name: r.name, program: c.value });
  });
  if (!(total <= limits.cel.maxCost)) {
    throw new AuthorizationConfigError(`authorization.rules: estimated cost ${total} together, more than the budget of ${limits.cel.maxCost} (cel.maxCost)`);
  }
  return { deny, allow };
}

type RuleResult = 'true' | 'false' | 'error';

function evaluate(rule: CompiledRule, bindings: CelBindings): RuleResult {
  const out = rule.program.run(bindings);
  if (!out.ok || typeof out.value !== 'boolean') return 'error';
  return out.value ? 'true' : 'false';
}

const refuse = (reason: AuthReason, detail: string): AuthDenial => ({ ok: false, error: ERRORS.forbidden, reason, detail });

/** The first rule of `rules` that is true, or else the first that failed, or null. */
function firstTrue(rules: readonly CompiledRule[], bindings: CelBindings): { rule: CompiledRule; result: 'true' | 'error' } | null {
  let failed: CompiledRule | null = null;
  for (const rule of rules) {
    const r = evaluate(rule, bindings);
    if (r === 'true') return { rule, result: 'true' };
    if (r === 'error') failed ??= rule;
  }
  return failed ? { rule: failed, result: 'error' } : null;
}

function decide(deny: readonly CompiledRule[], allow: readonly CompiledRule[], bindings: CelBindings): AuthVerdict {
  const denied = firstTrue(deny, bindings);
  if (denied?.result === 'true') return refuse('denied', `denied by rule ${denied.rule.name}`);
  if (denied) return refuse('error', `rule ${denied.rule.name} could not be evaluated; refused`);
  if (!allow.length) return { ok: true };
  const allowed = firstTrue(allow, bindings);
  if (allowed?.result === 'true') return { ok: true, note: `allowed by rule ${allowed.rule.name}` };
  if (allowed) return refuse('error', `rule ${allowed.rule.name} could not be evaluated and no rule allows this request; refused`);
  return refuse('not_allowed', 'no rule allows this request');
}

/** Needs nothing of the process (AuthDeps): the rules are pure; their bounds are the snapshot's. */
export function compileAuthorization(ir: AuthorizationIR, _deps: unknown, limits: EvaluationLimits): AuthCheck {
  const { deny, allow } = compileRules(ir, limits);
  const reads = readsOf([...deny, ...allow].map((r) => r.program));
  return {
    kind: 'authorization',
    needsBody: reads.has('llm.model'),
    run(req: AuthRequest): AuthVerdict {
      // The model of a body too large to read is unknown: deciding on "" would let a padded
      // body past a Deny rule on the model.
      if (req.bodyTooLarge && reads.has('llm.model')) return { ok: false, error: ERRORS.authRulesBodyTooLarge, reason: 'body_too_large', detail: 'the rules read its model, and it was not read whole' };
      const bound = bindRequest(req, reads, limits.cel);
      if (!bound.ok) return { ok: false, error: ERRORS.expressionInputTooLarge, reason: 'too_large', detail: `${bound.input}: ${bound.problem}` };
      return decide(deny, allow, bound.bindings);
    },
  };
}
