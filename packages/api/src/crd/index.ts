export * from './status.js';
export * from './structural.js';
export * from './gateway-policy.js';
export { writeCrds, staleCrds, type StaleCrd } from './files.js';
export * from './backend.js';
