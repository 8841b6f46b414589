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

/**
 * Generated text held as the JSON string literals it arrived in, decoded only when asked for:
 * a stream whose usage is reported never needs its text, so a translation that passes the
 * literals on as they came does not decode each one. Bounded as CompletionText (by literal
 * length, a little more than the text's).
 */
export class CompletionLiterals {
  #literals: string[] = [];
  #chars = 0;
  #extra = 0;

  /** A JSON string literal (quotes included), as checked by the caller. */
  addLiteral(literal: string): void {
    if (this.#chars + literal.length <= MAX_COMPLETION_CHARS) {
      this.#literals.push(literal);
      this.#chars += literal.length;
    } else this.#extra += literal.length - 2;
  }

  /** Bound to the instance: a text sink for readers that have the text decoded already. */
  readonly add = (text: string): void => this.addLiteral(JSON.stringify(text));

  /** The text, decoded. */
  text(): CompletionText {
    const out = new CompletionText();
    if (this.#literals.length) out.add((JSON.parse(`[${this.#literals.join(',')}]`) as string[]).join(''));
    out.countExtra(this.#extra);
    return out;
  }
}
