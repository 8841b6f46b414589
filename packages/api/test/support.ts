// Shared by the config validation tests: the problems a config has, as "path: message" lines,
// and a minimal config around one listener's routes.
import { validateStandaloneConfig, ValidationError } from '../src/index.js';

export function problems(value: unknown): string[] {
  try {
    validateStandaloneConfig(value);
  } catch (err) {
    if (err instanceof ValidationError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

export const route = (extra: Record<string, unknown> = {}) => ({ name: 'r', backends: [{ host: '127.0.0.1:9000' }], ...extra });

/** One bind on port 3000 with listener "l" holding `routes`; `extra` adds top-level fields (config). */
export const cfg = (routes: unknown[], listener: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  ...extra,
  binds: [{ port: 3000, listeners: [{ name: 'l', protocol: 'HTTP', routes, ...listener }] }],
});
