// Regular expressions from configs (path, header and query parameter matches) run on RE2
// (re2js, pure JavaScript): matching takes time linear in the input whatever the pattern, so a
// pattern like (a+)+$ cannot make one request burn a core, as it can on V8's backtracking
// engine. The syntax is RE2's, as in Envoy: no backreferences or lookaround; validation
// reports them with the field. docs/security.md has the cost per match.
import type * as Re2js from 're2js';
import type { RE2JS } from 're2js';
import type { Parsed } from './host-port.js';
import { lazyModule } from './lazy-module.js';

// Loaded by the first regular expression a config holds.
const re2js = lazyModule<typeof Re2js>('re2js');

export interface RouteRegex {
  /** True when the whole input matches (Gateway API: the pattern is anchored at both ends). */
  test(input: string): boolean;
}

/** Compiles a user-supplied pattern, or says why it is not valid RE2 (phrased to follow `got "<value>"`). */
export function compileRouteRegex(source: string): Parsed<RouteRegex> {
  let re: RE2JS;
  try {
    re = re2js().RE2JS.compile(source);
  } catch (err) {
    return { ok: false, problem: `not a valid regular expression in RE2 syntax (${(err as Error).message}); backreferences and lookaround are not supported` };
  }
  return { ok: true, value: { test: (input) => re.testExact(input) } };
}
