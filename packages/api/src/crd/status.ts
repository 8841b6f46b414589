// Status of a GatewayPolicy, in the shape Gateway API policies use (GEP-713 PolicyStatus):
// one entry per ancestor (the Gateway a targeted route or gateway belongs to), each with the
// conditions the controller of that ancestor reports (Accepted, Attached, ServicesAvailable).
import { Type, type Static } from '@sinclair/typebox';
import { Enum } from '../schema/common.js';

export const MAX_POLICY_ANCESTORS = 16;
export const MAX_POLICY_CONDITIONS = 8;

const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const PolicyAncestorRef = Type.Object(
  {
    group: Type.String({
      maxLength: 253,
      pattern: '^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      description: 'API group of the ancestor; gateway.networking.k8s.io for a Gateway.',
    }),
    kind: Type.String({ minLength: 1, maxLength: 63, description: 'Kind of the ancestor, e.g. Gateway.' }),
    namespace: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'Namespace of the ancestor.' })),
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Name of the ancestor.' }),
    sectionName: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, pattern: NAME_PATTERN, description: 'Listener of the ancestor Gateway the status is about, when it is about one.' }),
    ),
  },
  { additionalProperties: false, description: 'The object (normally a Gateway) this status entry is about.' },
);

export const PolicyCondition = Type.Object(
  {
    type: Type.String({
      minLength: 1,
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
      description:
        "Type of the condition: Accepted (the policy is valid and its target exists), Attached (the target hangs on this ancestor Gateway, so the policy is part of that Gateway's configuration; whether the Gateway's proxies apply it is the Gateway's Programmed condition) or ServicesAvailable (the Services the policy sends to, such as its rate limit service, have ready endpoints; only on accepted policies that name one).",
    }),
    status: Enum(['True', 'False', 'Unknown'], 'Status of the condition: True, False or Unknown.'),
    reason: Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
      description: 'Machine-readable CamelCase reason for the last transition, e.g. Accepted, Invalid, TargetNotFound.',
    }),
    message: Type.String({ maxLength: 32768, description: 'Human-readable details of the last transition.' }),
    lastTransitionTime: Type.String({ format: 'date-time', description: 'When the condition last changed status.' }),
    observedGeneration: Type.Optional(
      Type.Integer({ minimum: 0, description: 'metadata.generation of the policy the condition was computed from.' }),
    ),
  },
  { additionalProperties: false, description: 'One observation about the policy, in the metav1.Condition shape.' },
);
export type PolicyCondition = Static<typeof PolicyCondition>;

export const PolicyAncestorStatus = Type.Object(
  {
    ancestorRef: PolicyAncestorRef,
    controllerName: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/[A-Za-z0-9\\/\\-._~%!$&\'()*+,;=:]+$',
      description: 'Controller that wrote this entry, e.g. tollgate.dev/gateway-controller.',
    }),
    conditions: Type.Array(PolicyCondition, {
      minItems: 1,
      maxItems: MAX_POLICY_CONDITIONS,
      description: 'Conditions of the policy for this ancestor (Accepted, Attached, ServicesAvailable).',
    }),
  },
  { additionalProperties: false, description: 'Status of the policy for one ancestor.' },
);
export type PolicyAncestorStatus = Static<typeof PolicyAncestorStatus>;

export const GatewayPolicyStatus = Type.Object(
  {
    ancestors: Type.Optional(
      Type.Array(PolicyAncestorStatus, {
        maxItems: MAX_POLICY_ANCESTORS,
        description: 'Status per ancestor (Gateway) the policy reaches, written by the controllers of those ancestors; a policy that reaches no Gateway has one entry on its target itself.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Observed state of the policy, written by the controller.' },
);
export type GatewayPolicyStatus = Static<typeof GatewayPolicyStatus>;
