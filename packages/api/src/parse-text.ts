// YAML or JSON text to a value, strictly: duplicate keys refused, alias expansion bounded, and
// every failure (the parser's own included) a ValidationError naming the subject, never a
// stack. The config file and the files its policies name (API keys) are read through it.
import { yaml } from './yaml.js';
import { ValidationError } from './validation-error.js';

/** Most alias references (`*name`) a config may expand; more is an alias bomb, not a config. */
const MAX_ALIAS_COUNT = 100;

/** The parser's message in the user's terms: what is wrong with the text, not which API to call. */
function parserProblem(message: string): string {
  const first = (message.split('\n')[0] ?? message).trim();
  if (/Maximum call stack size exceeded/.test(first)) return `nested too deeply to parse${first.replace(/^.*?( at line \d+, column \d+)?:?$/, '$1')}; a config nests a few levels, not hundreds`;
  if (/multiple documents/.test(first)) return `the file holds more than one YAML document${first.replace(/^.*?( at line \d+, column \d+)?:?$/, '$1')}; put the whole config in one document (no second "---")`;
  return first;
}

/**
 * Parses YAML or JSON text (JSON is YAML), rejecting duplicate keys. Every failure, the
 * parser's own included (an alias bomb, nesting that exhausts the stack), is a
 * ValidationError naming `subject`: never a stack.
 */
export function parseConfigText(text: string, subject: string, empty = 'the file is empty; expected an object with a "binds" list'): unknown {
  let value: unknown;
  try {
    const doc = yaml().parseDocument(text, { uniqueKeys: true, prettyErrors: true, strict: true });
    if (doc.errors.length) {
      throw new ValidationError(
        subject,
        doc.errors.map((e) => ({ path: '', message: parserProblem(e.message) })),
      );
    }
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    if (/alias count/i.test(message)) {
      throw new ValidationError(subject, [
        { path: '', message: `aliases (*name) expand to too much: more than ${MAX_ALIAS_COUNT} alias references, as in a YAML alias bomb; write the values out or use fewer aliases` },
      ]);
    }
    throw new ValidationError(subject, [{ path: '', message: `cannot be parsed: ${parserProblem(message)}` }]);
  }
  if (value === null || value === undefined) {
    throw new ValidationError(subject, [{ path: '', message: empty }]);
  }
  return value;
}
