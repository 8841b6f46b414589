// The YAML library, loaded on first use: a proxy reads YAML only from a config file (the
// main thread, at start and on reload), and its worker threads and a proxy fed by the
// controller never do. Every use in the project goes through this accessor.
import type * as Yaml from 'yaml';
import { lazyModule } from './lazy-module.js';

export const yaml = lazyModule<typeof Yaml>('yaml');
