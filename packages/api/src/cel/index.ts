export { compileCel, type CelOutcome, type CelProgram } from './compile.js';
export { bindRequest, readsOf, type Bound, type CelBindings, type ConsumerInputs, type RequestInputs } from './inputs.js';
export type { InputName } from './check.js';
export { MAX_EXPRESSION_LENGTH, MAX_EXPRESSION_NESTING } from './guard.js';
export { MAX_ADDRESS_LENGTH, MAX_HOST_LENGTH, MAX_METHOD_LENGTH, MAX_MODEL_LENGTH, MAX_CONSUMER_NAME_LENGTH, MAX_CONSUMER_LABELS, MAX_CONSUMER_LABEL_LENGTH, MAX_CONSUMER_CLAIMS, MAX_CLAIM_LENGTH, type CelSurface } from './surfaces.js';
export { celToJson, celToText, type JsonOutcome, type JsonWritable } from './json.js';
