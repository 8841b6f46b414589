// `gwctl controller log`: the controller's per-component log levels through its admin API
// (`/logging` on 127.0.0.1:9095, contract in docs/admin-api.md). Prints the levels as a
// directive, then `---`, then one `<component>: <level>` line per component.
import { adminError, adminRequest, firstLine, type Answer } from '../admin-client.js';
import { GwctlError } from '../errors.js';
import { write, type Io } from '../io.js';
import { parseLevel, parseSet } from '../log-levels.js';
import { controllerTarget, withTarget, type TargetFlags } from '../target/resolve.js';
import type { Target } from '../target/target.js';

export interface ControllerLogFlags extends TargetFlags {
  level?: string;
  set?: string[];
}

/** The components of the interface spec §4.3, in the order they are printed. */
export const COMPONENTS = ['tollgate/syncer', 'tollgate/translator', 'gateway-controller', 'deployer', 'default'] as const;

export type Levels = Record<string, string>;

function levelsOf(method: string, path: string, a: Answer): Levels {
  if (a.status < 200 || a.status >= 300) throw adminError(method, path, a);
  let body: unknown;
  try {
    body = JSON.parse(a.body);
  } catch {
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `${method} /logging did not answer JSON: ${firstLine(a.body)}`);
  }
  const levels = (body as { levels?: unknown } | null)?.levels;
  if (!levels || typeof levels !== 'object' || Object.values(levels).some((v) => typeof v !== 'string')) {
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `${method} /logging answered without a "levels" object of strings`);
  }
  return levels as Levels;
}

/** Known components first, in spec order, then any others the controller reports. */
function ordered(levels: Levels): [string, string][] {
  const known = COMPONENTS.filter((c) => c in levels).map((c) => [c, levels[c]!] as [string, string]);
  const rest = Object.keys(levels)
    .filter((c) => !(COMPONENTS as readonly string[]).includes(c))
    .sort()
    .map((c) => [c, levels[c]!] as [string, string]);
  return [...known, ...rest];
}

/**
 * `current log level is info,tollgate/syncer=debug,...` (the form `--log-level` takes: the
 * default level, then every other component), `---`, then `<component>: <level>` lines.
 */
export function renderLevels(levels: Levels): string {
  const entries = ordered(levels);
  const directive = [levels.default ?? 'info', ...entries.filter(([c]) => c !== 'default').map(([c, l]) => `${c}=${l}`)].join(',');
  return [`current log level is ${directive}`, '---', ...entries.map(([c, l]) => `${c}: ${l}`)].join('\n') + '\n';
}

async function call(t: Target, method: 'GET' | 'POST', path: string): Promise<Levels> {
  return levelsOf(method, path, await adminRequest(t, method, path));
}

export async function controllerLog(flags: ControllerLogFlags, io: Io): Promise<void> {
  const level = flags.level === undefined ? undefined : parseLevel(flags.level, '--level');
  const sets = (flags.set ?? []).map(parseSet);
  const levels = await withTarget(controllerTarget(flags, io), async (t) => {
    let last: Levels | undefined;
    if (level) last = await call(t, 'POST', `/logging?level=${level}`);
    for (const s of sets) last = await call(t, 'POST', `/logging?component=${encodeURIComponent(s.name)}&level=${s.level}`);
    return last ?? call(t, 'GET', '/logging');
  });
  write(io.stdout, renderLevels(levels));
}
