export * from './retry.js';
export * from './failover.js';
export * from './settings.js';
