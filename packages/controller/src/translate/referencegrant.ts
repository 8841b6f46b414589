// ReferenceGrant: a reference from an object in one namespace to an object in another is
// allowed only when a ReferenceGrant in the target's namespace says so.
import type { ReferenceGrant } from '../types/gateway-api.js';

export interface ReferenceFrom {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
}

export interface ReferenceTo {
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

const plural = (kind: string) => (kind.endsWith('y') ? `${kind.slice(0, -1)}ies` : `${kind}s`);

/** Why a reference to `object` (e.g. `Secret keys/team-a`) in another namespace is refused, and what allows it. */
export function grantNeeded(object: string, namespace: string, from: ReferenceFrom): string {
  return `${object} is in another namespace; a ReferenceGrant in ${namespace} must allow ${plural(from.kind)} of ${from.namespace} to refer to it`;
}

export class ReferenceGrants {
  /** `<to namespace>` -> grants in it. */
  readonly #byNamespace = new Map<string, ReferenceGrant[]>();

  constructor(grants: readonly ReferenceGrant[]) {
    for (const g of grants) {
      const ns = g.metadata.namespace;
      if (!ns) continue;
      const list = this.#byNamespace.get(ns);
      if (list) list.push(g);
      else this.#byNamespace.set(ns, [g]);
    }
  }

  /** The grants in a namespace (what a cross-namespace reference into it depends on). */
  inNamespace(namespace: string): readonly ReferenceGrant[] {
    return this.#byNamespace.get(namespace) ?? [];
  }

  /** True when `from` may refer to `to` (always within one namespace). */
  permits(from: ReferenceFrom, to: ReferenceTo): boolean {
    if (from.namespace === to.namespace) return true;
    for (const g of this.#byNamespace.get(to.namespace) ?? []) {
      const fromOk = (g.spec.from ?? []).some((f) => f.group === from.group && f.kind === from.kind && f.namespace === from.namespace);
      if (!fromOk) continue;
      if ((g.spec.to ?? []).some((t) => t.group === to.group && t.kind === to.kind && (t.name === undefined || t.name === '' || t.name === to.name))) return true;
    }
    return false;
  }
}
