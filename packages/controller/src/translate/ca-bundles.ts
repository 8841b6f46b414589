// CA bundles read from the `ca.crt` key of a ConfigMap (or of a Secret, base64 in its data), for
// BackendTLSPolicies and the Gateway's client certificate validation. Checking a bundle parses
// every certificate: done once per object, whatever the number of references and translations
// that use it (an informer replaces an object when it changes).
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { caBundleProblem } from '@tollgate/api';

/** The key the Gateway API names for CA certificates. */
export const CA_KEY = 'ca.crt';

export type CaBundleCheck = { readonly ok: true; readonly pem: string } | { readonly ok: false; readonly problem: string };

const checked = new WeakMap<V1ConfigMap | V1Secret, CaBundleCheck>();

function check(pem: string | undefined): CaBundleCheck {
  const problem = pem === undefined ? `has no key ${CA_KEY}` : pem.trim() === '' ? `has an empty ${CA_KEY}` : caBundleProblem(pem);
  return problem === null ? { ok: true, pem: pem! } : { ok: false, problem };
}

/** The checked bundle of a ConfigMap; a problem reads as a sentence after the object's name. */
export function configMapBundle(cm: V1ConfigMap): CaBundleCheck {
  let b = checked.get(cm);
  if (!b) checked.set(cm, (b = check(cm.data?.[CA_KEY])));
  return b;
}

/** The checked bundle of a Secret (its data is base64). */
export function secretBundle(secret: V1Secret): CaBundleCheck {
  let b = checked.get(secret);
  if (!b) {
    const raw = secret.data?.[CA_KEY];
    b = check(raw === undefined ? undefined : Buffer.from(raw, 'base64').toString('utf8'));
    checked.set(secret, b);
  }
  return b;
}
