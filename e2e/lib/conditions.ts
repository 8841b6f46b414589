// Status conditions as the e2e suites read them from `kubectl get -o json`.
export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface GatewayStatus {
  status?: { conditions?: Condition[] };
}

/** The Gateway's `Programmed` condition, if written. */
export const programmed = (g: GatewayStatus): Condition | undefined => g.status?.conditions?.find((c) => c.type === 'Programmed');

/** A GatewayPolicy's status as read back. */
export interface PolicyStatus {
  status?: { ancestors?: { controllerName: string; ancestorRef: { kind?: string; name: string }; conditions: Condition[] }[] };
}

/** A condition of Tollgate's first ancestor entry of a GatewayPolicy, if written. */
export const policyCondition = (p: PolicyStatus, type: string): Condition | undefined =>
  p.status?.ancestors?.find((a) => a.controllerName === 'tollgate.dev/gateway-controller')?.conditions.find((c) => c.type === type);
