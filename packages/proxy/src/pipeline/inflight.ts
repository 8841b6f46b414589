// Requests in flight, for /debug/tasks and for draining: what each is doing and since when.
export interface InFlight {
  readonly id: number;
  readonly method: string;
  readonly url: string;
  readonly startedAt: number;
  stage: 'routing' | 'upstream' | 'responding';
  route?: string;
  upstream?: string;
  traced?: number;
}
