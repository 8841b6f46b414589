// What a transformation did to one request, as the trace shows it (the `route policies` and
// `final request` snapshots) and as tollgate_transformations_total counts it.
import { Type, type Static } from '@sinclair/typebox';
import { Enum } from '../schema/common.js';

/**
 * How a request's transformation ended: the `result` label of tollgate_transformations_total,
 * a fixed set (never an expression or a value). docs/transformation.md says what each answers.
 */
export const TRANSFORM_RESULTS = [
  /** Every edit whose condition held was made. */
  'applied',
  /** An expression could not be evaluated (a missing map key, a division by zero): 500. */
  'evaluation_error',
  /** An expression gave what its field cannot hold (CR/LF in a header value, bytes in a body, an oversized value): 500. */
  'invalid_value',
  /** An input the expressions read is over its bound: 431, nothing evaluated. */
  'input_too_large',
  /** Body edits and a body that is not a JSON object: 400. */
  'body_not_json',
  /** Body edits and a body over config.maxRequestBodyBytes, or edited beyond it: 413. */
  'body_too_large',
] as const;
export type TransformResult = (typeof TRANSFORM_RESULTS)[number];

export const TransformationState = Type.Object(
  {
    source: Enum(['gateway', 'route'], 'Where the transformation that ran is attached (the route\'s replaces the Gateway\'s).'),
    result: Enum(TRANSFORM_RESULTS, 'applied, or why the request was refused (the metric label).'),
    headers: Type.Array(Type.String(), { description: 'Request headers set, added or removed.' }),
    body: Type.Array(Type.String(), { description: 'Body fields set or removed.' }),
    skipped: Type.Array(Type.String(), { description: 'Edits whose condition (when) was false, by field path.' }),
    note: Type.Union([Type.String(), Type.Null()], { description: 'What failed: the field and why; never a value.' }),
  },
  { additionalProperties: false },
);
export type TransformationState = Static<typeof TransformationState>;
