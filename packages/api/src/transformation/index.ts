export * from './transformation.js';
export { toTransformationIR, transformExpression, expressionText } from './transformation-ir.js';
export { checkTransformation, headerValueProblem, REQUEST_HEADERS_NOT_EDITED, RESPONSE_HEADERS_NOT_EDITED } from './check.js';
export * from './state.js';
