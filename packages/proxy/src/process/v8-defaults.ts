// V8 settings the proxy runs with unless the node command line sets them itself.
//
// Allocation-site pretenuring, off: V8 allocates the objects of an allocation site straight
// into the old generation once most of them outlived a young collection. On the LLM routes a
// request's objects live as long as its upstream exchange, so under load most of them are
// alive at each young collection: their sites get pretenured, every young collection then
// promotes megabytes and pauses 5-6 ms instead of 1.5, and the old generation fills up until
// a full collection. Nothing is retained: the objects only move early, and pay for it in the
// tail. Measured (docs/benchmarks.md, bench/peers/run.mjs at the same request rate): p99 0.49x
// on the LLM route and 0.31x streaming, CPU per request 0.91x and 0.96x.
import { setFlagsFromString } from 'node:v8';

export const V8_DEFAULTS: readonly string[] = ['--no-allocation-site-pretenuring'];

/** `--no-foo`, `--foo`, `--foo=1` and `--foo_bar` all name the flag `foo` / `foo-bar`. */
function flagName(arg: string): string {
  return arg.replace(/=.*$/s, '').replace(/^--(no-)?/, '').replaceAll('_', '-');
}

/** The defaults that neither the node command line (`execArgv`) nor NODE_OPTIONS sets, either way. */
export function v8Defaults(execArgv: readonly string[], nodeOptions: string): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].filter((a) => a.startsWith('--')).map(flagName));
  return V8_DEFAULTS.filter((f) => !given.has(flagName(f)));
}

/**
 * Sets the defaults the command line left; bin/tollgate.js runs it before the proxy's modules
 * load. V8's flags are the process's: worker threads started later hold them too.
 */
export function applyV8Defaults(): readonly string[] {
  applied = v8Defaults(process.execArgv, process.env.NODE_OPTIONS ?? '');
  for (const flag of applied) setFlagsFromString(flag);
  return applied;
}

let applied: readonly string[] = [];

/** What applyV8Defaults set in this process (none when the proxy was started otherwise than by bin/tollgate.js). */
export function appliedV8Defaults(): readonly string[] {
  return applied;
}
