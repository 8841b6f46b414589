export * from './origin.js';
export * from './cors.js';
export * from './csrf.js';
export * from './direct-response.js';
export { toCorsIR, checkCors, checkCorsFilter } from './cors-ir.js';
export { toCsrfIR } from './csrf-ir.js';
export { toDirectResponseIR } from './direct-response-ir.js';
export * from './kinds.js';
