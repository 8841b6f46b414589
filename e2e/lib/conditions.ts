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
