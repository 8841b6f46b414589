// Token estimation for responses that report no usage: a real tokenizer (gpt-tokenizer,
// o200k encoding) over the prompt and the completion text. Loaded on first use so that
// gateways that never estimate do not pay for its tables.
type Encode = (text: string) => number[];
let encoder: Promise<Encode> | null = null;

export async function estimateTokens(...texts: string[]): Promise<number> {
  encoder ??= import('gpt-tokenizer').then((m) => m.encode);
  const encode = await encoder;
  let n = 0;
  for (const t of texts) if (t) n += encode(t).length;
  return n;
}
