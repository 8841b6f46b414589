// Failover across a route's backends by priority. The Gateway API has no field for it, so it
// lives where the route's owner writes it: on each backend of a standalone route
// (`backends[].priority`), and in a cluster in the GatewayPolicy that targets the HTTPRoute
// (`spec.failover`), naming the backendRefs by what they reference. Both end as the `priority`
// of each backend in the IR; the proxy orders a route's backends by it (routing/priority-levels.ts).
import { Type, type Static } from '@sinclair/typebox';

/** Priorities run from 0 (tried first, the default) to this. */
export const MAX_PRIORITY = 100;
/** Entries of one failover policy: a route has at most 16 backendRefs per rule. */
export const MAX_FAILOVER_ENTRIES = 16;

export const Priority = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_PRIORITY, description });

export const BackendPriority = Priority(
  `Failover order: the backends of the lowest priority share the requests by weight; the next priority answers when they fail (a connection error, a timeout, a 5xx or a 429). 0 to ${MAX_PRIORITY}; default 0.`,
);

const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const FailoverBackendRef = Type.Object(
  {
    group: Type.Optional(Type.String({ maxLength: 253, description: 'API group of the referent: "" (core, a Service; the default) or tollgate.dev (a Backend).' })),
    kind: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Kind of the referent: Service (the default) or Backend.' })),
    name: Type.String({ minLength: 1, maxLength: 253, pattern: NAME_PATTERN, description: 'Name of the referent.', expected: 'a Kubernetes object name' }),
    namespace: Type.Optional(
      Type.String({ minLength: 1, maxLength: 63, pattern: NAME_PATTERN, description: 'Namespace of the referent; default the policy\'s (the route\'s).', expected: 'a namespace name' }),
    ),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Port of the referent; absent: every backendRef to it, whatever the port.' })),
  },
  { additionalProperties: false, description: 'Which backendRefs of the targeted rules this entry orders: those referencing this object.' },
);
export type FailoverBackendRef = Static<typeof FailoverBackendRef>;

export const FailoverPolicy = Type.Object(
  {
    priorities: Type.Array(
      Type.Object(
        { backendRef: FailoverBackendRef, priority: BackendPriority },
        { additionalProperties: false, description: 'The priority of the backendRefs that reference one object.' },
      ),
      {
        minItems: 1,
        maxItems: MAX_FAILOVER_ENTRIES,
        description: 'Priorities of the targeted rules\' backendRefs; a backendRef no entry names keeps priority 0. Applies to HTTPRoute and GRPCRoute targets only.',
      },
    ),
  },
  { additionalProperties: false, description: 'Failover across the backendRefs of the targeted HTTPRoute or GRPCRoute rules, by priority (docs/retries-failover.md).' },
);
export type FailoverPolicy = Static<typeof FailoverPolicy>;

/** The group of a backendRef as the Gateway API defaults it (core). */
function refGroup(group: string | undefined): string {
  return group ?? '';
}

/**
 * The priority the policy gives a backendRef of a rule in `routeNamespace` (0 when no entry
 * names it; the first entry that does wins).
 */
export function priorityOf(
  policy: FailoverPolicy | undefined,
  routeNamespace: string,
  ref: { readonly group?: string; readonly kind?: string; readonly name: string; readonly namespace?: string; readonly port?: number },
): number {
  if (!policy) return 0;
  for (const p of policy.priorities) {
    const e = p.backendRef;
    if (
      refGroup(e.group) === refGroup(ref.group) &&
      (e.kind ?? 'Service') === (ref.kind ?? 'Service') &&
      e.name === ref.name &&
      (e.namespace ?? routeNamespace) === (ref.namespace ?? routeNamespace) &&
      (e.port === undefined || e.port === ref.port)
    )
      return p.priority;
  }
  return 0;
}
