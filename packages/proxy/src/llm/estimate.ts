// Token estimation for responses that report no usage: a real tokenizer (gpt-tokenizer,
// o200k encoding) over the prompt and the completion text. Its tables are large, so they are
// loaded only when a config has a route that counts tokens (`loadTokenizer`, awaited before
// such a config serves); estimating is then synchronous, so a response's tokens are charged
// before its last byte reaches the client.
type Encode = (text: string) => number[];
let encode: Encode | null = null;
let loading: Promise<void> | null = null;

export function loadTokenizer(): Promise<void> {
  loading ??= import('gpt-tokenizer').then((m) => {
    encode = m.encode;
  });
  return loading;
}

/** Tokens in the texts; loadTokenizer() must have completed. */
export function estimateTokens(...texts: string[]): number {
  if (!encode) throw new Error('tokenizer not loaded: loadTokenizer() runs when a config counts tokens');
  let n = 0;
  for (const t of texts) if (t) n += encode(t).length;
  return n;
}
