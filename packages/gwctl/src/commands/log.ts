// `gwctl log`: the proxy's log directive. Without flags it prints the current directive;
// --level sets the global level (module entries are kept), --set <module>=<level> one module,
// --reset returns to the start-up directive.
import { adminOk, firstLine } from '../admin-client.js';
import { GwctlError, usage } from '../errors.js';
import { write, type Io } from '../io.js';
import { parseLevel, parseSet } from '../log-levels.js';
import { gatewayTarget, withTarget, type TargetFlags } from '../target/resolve.js';

export interface LogFlags extends TargetFlags {
  level?: string;
  set?: string[];
  reset?: boolean;
}

/** The directive to POST, or null to only read. */
export function directiveOf(flags: LogFlags): string | null {
  const parts: string[] = [];
  if (flags.level !== undefined) parts.push(parseLevel(flags.level, '--level'));
  for (const s of flags.set ?? []) {
    const { name, level } = parseSet(s);
    parts.push(`${name}=${level}`);
  }
  if (flags.reset && parts.length) throw usage('--reset cannot be combined with --level or --set');
  return parts.length ? parts.join(',') : null;
}

export async function proxyLog(ref: string | undefined, flags: LogFlags, io: Io): Promise<void> {
  const directive = directiveOf(flags);
  const body = await withTarget(gatewayTarget(ref, flags, io), (t) => {
    if (flags.reset) return adminOk(t, 'POST', '/logging?reset');
    if (directive === null) return adminOk(t, 'GET', '/logging');
    return adminOk(t, 'POST', `/logging?level=${encodeURIComponent(directive)}`);
  });
  // The proxy answers `current log level is <directive>` (docs/admin-api.md); anything else is
  // not a Tollgate proxy's /logging and is reported, not printed as if it were a level.
  const answer = body.trim();
  if (!/^current log level is \S+$/.test(answer)) {
    throw new GwctlError('TG_GWCTL_ADMIN_ERROR', `/logging answered without the log level ("current log level is <directive>"): ${firstLine(answer) || '(empty body)'}`);
  }
  write(io.stdout, answer);
}
