// Regular expressions from configs (path, header and query parameter matches, CEL's
// matches()) run on RE2 (re2js, pure JavaScript): matching takes time linear in the input
// whatever the pattern, so a pattern like (a+)+$ cannot make one request burn a core, as it
// can on V8's backtracking engine. The syntax is RE2's, as in Envoy: no backreferences or
// lookaround; validation reports them with the field.
//
// Linear is not cheap: a match costs input length × program size, and RE2 accepts programs
// of hundreds of thousands of instructions. So every pattern is bounded (limits.ts, with
// docs/security.md): its length and its written-out size before it is compiled (compiling is
// what costs), its program size on the one compile, and the input a route match hands it.
// Every pattern compiles here, once per process for a given text and bounds: the controller
// and the proxy validate, then use, the same compiled program.
import type * as Re2js from 're2js';
import type { RE2JS } from 're2js';
import type { Parsed } from './host-port.js';
import { lazyModule } from './lazy-module.js';
import type { RegexLimits } from './limits.js';
import { expandedSize } from './regex-size.js';

// Loaded by the first regular expression a config holds.
const re2js = lazyModule<typeof Re2js>('re2js');

/** The written-out size a pattern may have before it is compiled, per instruction it may compile to. */
export const EXPANSION_PER_INSTRUCTION = 10;

export interface CompiledRegex {
  /** Instructions of the compiled program (what a match costs per input character, at most). */
  readonly programSize: number;
  /** True when the whole input matches (Gateway API: the pattern is anchored at both ends). */
  testExact(input: string): boolean;
  /** True when some part of the input matches (CEL's matches()). */
  testPartial(input: string): boolean;
}

export interface RouteRegex {
  /**
   * True when the whole input matches; false, without running the pattern, for an input
   * longer than the bound (docs/security.md).
   */
  test(input: string): boolean;
}

/** Most compiled patterns (and refusals) remembered; beyond it the least recently used is dropped. */
const CACHE_ENTRIES = 1024;
const cache = new Map<string, Parsed<CompiledRegex>>();

function remember(key: string, value: Parsed<CompiledRegex>): Parsed<CompiledRegex> {
  if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(key, value);
  return value;
}

/** A problem phrased to follow `got "<value>"`. */
function refuse(problem: string): Parsed<CompiledRegex> {
  return { ok: false, problem };
}

function compileNew(source: string, limits: RegexLimits): Parsed<CompiledRegex> {
  if (source.length > limits.maxPatternLength) {
    return refuse(`the pattern is ${source.length} characters long, more than the ${limits.maxPatternLength} allowed (regex.maxPatternLength); shorten it`);
  }
  const expanded = expandedSize(source);
  const maxExpanded = limits.maxProgramSize * EXPANSION_PER_INSTRUCTION;
  if (expanded > maxExpanded) {
    return refuse(
      `with its repetitions written out the pattern is up to ${expanded} instructions, more than the ${maxExpanded} allowed before compiling (${EXPANSION_PER_INSTRUCTION} × regex.maxProgramSize ${limits.maxProgramSize}); use smaller repetition counts ({n,m}) or fewer nested repetitions`,
    );
  }
  let re: RE2JS;
  try {
    re = re2js().RE2JS.compile(source);
  } catch (err) {
    return refuse(`not a valid regular expression in RE2 syntax (${(err as Error).message}); backreferences and lookaround are not supported`);
  }
  const programSize = re.programSize();
  if (programSize > limits.maxProgramSize) {
    return refuse(`compiles to a program of ${programSize} instructions, more than the ${limits.maxProgramSize} allowed (regex.maxProgramSize); simplify the pattern (fewer alternatives, smaller repetition counts)`);
  }
  return { ok: true, value: { programSize, testExact: (input) => re.testExact(input), testPartial: (input) => re.test(input) } };
}

/**
 * A user-supplied pattern within the bounds, compiled; or why not (phrased to follow
 * `got "<value>"`). The same text under the same bounds compiles once per process.
 */
export function compileRegex(source: string, limits: RegexLimits): Parsed<CompiledRegex> {
  const key = `${limits.maxPatternLength}/${limits.maxProgramSize}\u0000${source}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  return remember(key, compileNew(source, limits));
}

/** A route match's pattern: compileRegex(), matched against whole inputs no longer than the bound. */
export function compileRouteRegex(source: string, limits: RegexLimits): Parsed<RouteRegex> {
  const r = compileRegex(source, limits);
  if (!r.ok) return r;
  const re = r.value;
  const max = limits.maxInputLength;
  return { ok: true, value: { test: (input) => input.length <= max && re.testExact(input) } };
}
