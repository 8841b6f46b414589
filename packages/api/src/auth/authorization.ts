// authorization: allow and deny rules in CEL over the request, the consumer and the requested
// model, evaluated by the one cost-bounded evaluator (cel/). A matching deny rule refuses; when
// there are allow rules, one of them must match.
import { Type, type Static } from '@sinclair/typebox';
import { Obj, NonEmpty, Lit } from '../schema/wire-parts.js';

export const MAX_AUTHORIZATION_RULES = 32;

export const AuthorizationRule = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', description: 'Name shown in traces and metrics when the rule decides; default its index.', expected: 'lower-case letters, digits and "-"' })),
    action: Type.Unsafe<'Allow' | 'Deny'>({ type: 'string', enum: ['Allow', 'Deny'], description: 'Allow: the request may pass when the expression is true. Deny: the request is refused (403) when it is true.' }),
    expression: Type.String({ minLength: 1, maxLength: 4096, description: 'CEL expression giving a bool, over request (method, path, host, headers), source.address, consumer (name, group, labels, claims) and llm.model.' }),
  },
  { additionalProperties: false, description: 'One rule.' },
);

export const AuthorizationConfig = Type.Object(
  {
    rules: Type.Array(AuthorizationRule, { minItems: 1, maxItems: MAX_AUTHORIZATION_RULES, description: 'Deny rules are checked first: any true one refuses. Then, if there are Allow rules, at least one must be true.' }),
  },
  { additionalProperties: false, description: 'Who may do what, decided by CEL rules after authentication.' },
);
export type AuthorizationConfig = Static<typeof AuthorizationConfig>;

export interface AuthorizationRuleIR {
  readonly name: string;
  readonly action: 'Allow' | 'Deny';
  readonly expression: string;
}

export interface AuthorizationIR {
  readonly rules: readonly AuthorizationRuleIR[];
}

export const AuthorizationWire = Obj(
  {
    rules: Type.Array(
      Obj({ name: NonEmpty('Rule name.', 63), action: Type.Union([Lit('Allow'), Lit('Deny')]), expression: NonEmpty('CEL expression.', 4096) }, 'A rule.'),
      { minItems: 1, maxItems: MAX_AUTHORIZATION_RULES },
    ),
  },
  'Authorization rules.',
);
