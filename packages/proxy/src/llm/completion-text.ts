// The generated text of one response, kept to estimate its tokens when the backend reports no
// usage or the response is cut short. Bounded: beyond MAX_COMPLETION_CHARS characters are
// counted, not kept (a backend that streams for hours does not grow the proxy's memory).

/** Completion text kept for estimation; beyond it characters are counted, not kept. */
export const MAX_COMPLETION_CHARS = 4 * 1024 * 1024;

export class CompletionText {
  #text = '';
  #extra = 0;

  /** Bound to the instance: handed to readers as their text sink. */
  readonly add = (text: string): void => {
    const room = MAX_COMPLETION_CHARS - this.#text.length;
    if (text.length <= room) this.#text += text;
    else {
      this.#text += text.slice(0, Math.max(0, room));
      this.#extra += text.length - Math.max(0, room);
    }
  };

  /** Generated characters seen but not kept as text (bytes of a stream past what could be parsed). */
  countExtra(chars: number): void {
    this.#extra += chars;
  }

  /** Room left for text before characters are only counted. */
  get room(): number {
    return MAX_COMPLETION_CHARS - this.#text.length;
  }

  get text(): string {
    return this.#text;
  }

  /** Characters beyond the kept text (estimated at about 4 characters a token). */
  get extraChars(): number {
    return this.#extra;
  }
}

/** Literals held undecoded, counted with LITERAL_COST each: past it they are decoded into the text. */
const MAX_HELD_LITERAL_BYTES = 64 * 1024;
/**
 * What holding one literal costs beside its characters: it is a slice of its event's text and
 * keeps that alive (a backend sending a million empty deltas must not make a million held events).
 */
const LITERAL_COST = 128;

/**
 * Generated text held as the JSON string literals it arrived in, decoded in batches: a stream
 * whose usage is reported never needs its text, so a translation that passes the literals on as
 * they came decodes them only when it is asked for the text, or when what it holds passes
 * MAX_HELD_LITERAL_BYTES (then into a CompletionText, bounded as every meter's text is).
 */
export class CompletionLiterals {
  #literals: string[] = [];
  #held = 0;
  readonly #text = new CompletionText();

  /** A JSON string literal (quotes included), as checked by the caller. */
  addLiteral(literal: string): void {
    this.#literals.push(literal);
    this.#held += literal.length + LITERAL_COST;
    if (this.#held > MAX_HELD_LITERAL_BYTES) this.#decodeHeld();
  }

  /** Bound to the instance: a text sink for readers that have the text decoded already. */
  readonly add = (text: string): void => this.addLiteral(JSON.stringify(text));

  /** The text, decoded. */
  text(): CompletionText {
    this.#decodeHeld();
    return this.#text;
  }

  #decodeHeld(): void {
    if (!this.#literals.length) return;
    const texts = JSON.parse(`[${this.#literals.join(',')}]`) as string[];
    this.#literals = [];
    this.#held = 0;
    this.#text.add(texts.join(''));
  }
}
