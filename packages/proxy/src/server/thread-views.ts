// What each serving thread keeps of its own and the admin API shows for the process: the names
// it resolved, the rate limit service's last answers it got, the state of its endpoints and its
// requests in flight. The main thread reads its own part here and asks every worker for theirs
// (WorkerThreads.view); the admin routes merge the parts. A part is bounded by the thread's own
// bounds (config.dns.maxNames names, 10,000 answers, the config's endpoints) and lists at most
// MAX_LISTED_REQUESTS requests in flight (the oldest), however many the thread serves.
import type { GlobalAnswer } from '../ratelimit/global/answers.js';
import type { InFlight } from '../pipeline/inflight.js';
import type { DnsName } from '../upstream/dns-cache.js';
import type { EndpointView } from '../upstream/endpoints.js';
import type { ProxyRuntime } from './runtime.js';

/** Requests in flight one thread lists in /debug/tasks at most. */
export const MAX_LISTED_REQUESTS = 1_000;

export interface ThreadViews {
  readonly dns: DnsName[];
  readonly globalAnswers: GlobalAnswer[];
  /** By endpoint key (upstream/endpoints.ts, endpointKey). */
  readonly endpoints: [string, EndpointView][];
  readonly requests: InFlight[];
}

export type ViewName = keyof ThreadViews;

/** One thread's part of a view. */
export interface ViewPart<T> {
  readonly worker: number;
  readonly value: T;
}

/** A serving thread whose part is missing from a view: it did not answer in time, or failed to. */
export interface MissingPart {
  readonly worker: number;
  readonly reason: string;
}

/** The worker threads' parts of a view (the main thread's is not among them). */
export interface ViewParts<T> {
  readonly parts: ViewPart<T>[];
  readonly missing: MissingPart[];
}

/** This thread's part of view `name`. */
export function threadView<K extends ViewName>(runtime: ProxyRuntime, name: K): ThreadViews[K] {
  const views: { [N in ViewName]: () => ThreadViews[N] } = {
    dns: () => runtime.dns.view(),
    globalAnswers: () => [...runtime.globalAnswers.current()],
    endpoints: () => runtime.endpoints.views(),
    requests: () => oldest(runtime.inflight.values(), MAX_LISTED_REQUESTS),
  };
  return views[name]();
}

/** The first `n` of the requests in flight: the map holds them in the order they began. */
function oldest(requests: Iterable<InFlight>, n: number): InFlight[] {
  const out: InFlight[] = [];
  for (const r of requests) {
    if (out.length === n) break;
    out.push(r);
  }
  return out;
}
