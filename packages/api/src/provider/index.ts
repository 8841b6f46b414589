export * from './presets.js';
export * from './schema.js';
export * from './convert.js';
