// A checked key set (parseJwks of @tollgate/api) indexed for the verifier: the keys a token's
// `kid` names, or every key when it names none.
import { parseJwks, type JwksMode, type VerificationKey } from '@tollgate/api';

export class KeySet {
  readonly #byKid = new Map<string, VerificationKey[]>();

  constructor(readonly keys: readonly VerificationKey[]) {
    for (const k of keys) {
      if (k.kid === null) continue;
      const list = this.#byKid.get(k.kid);
      if (list) list.push(k);
      else this.#byKid.set(k.kid, [k]);
    }
  }

  /** The keys a token may be checked against: those of its kid, or all when it has none. */
  candidates(kid: string | undefined): readonly VerificationKey[] {
    return kid === undefined ? this.keys : (this.#byKid.get(kid) ?? []);
  }
}

/** A key set from JWKS text; throws with the problem when it is not one. */
export function keySetOf(text: string, mode: JwksMode): KeySet {
  const r = parseJwks(text, mode);
  if (!r.ok) throw new Error(r.problem);
  return new KeySet(r.keys);
}
