// Token estimation for responses that report no usage: a real tokenizer (gpt-tokenizer,
// o200k encoding) over the prompt and the completion text. Its tables take about 60 MiB of
// memory and a second or more of CPU to load, and most backends report usage, so they are
// loaded by the first response that needs an estimate, not by the config: that response's
// charge waits for them (its end reaches the client after the charge, as every metered
// response's does: see ResponsePolicies), later ones estimate synchronously.
type Encode = (text: string) => number[];
let encode: Encode | null = null;
let loading: Promise<Encode> | null = null;

function loadTokenizer(): Promise<Encode> {
  loading ??= import('gpt-tokenizer').then((m) => {
    encode = m.encode;
    return m.encode;
  });
  return loading;
}

function count(encoder: Encode, texts: readonly string[]): number {
  let n = 0;
  for (const t of texts) if (t) n += encoder(t).length;
  return n;
}

/** True once an estimate can be made synchronously. */
export function tokenizerLoaded(): boolean {
  return encode !== null;
}

/** Tokens in the texts: a number once the tokenizer is loaded, else a promise of it. */
export function estimateTokens(...texts: string[]): number | Promise<number> {
  if (encode) return count(encode, texts);
  return loadTokenizer().then((e) => count(e, texts));
}
