// Per-Gateway metrics of the snapshot stream, registered in the controller's registry.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export class StreamMetrics {
  readonly connected: Gauge<'gateway'>;
  readonly desired: Gauge<'gateway' | 'version'>;
  readonly acked: Gauge<'gateway' | 'version'>;
  readonly pushLatency: Histogram<'gateway'>;
  readonly answers: Counter<'gateway' | 'answer'>;
  readonly auth: Counter<'result'>;
  readonly reauth: Counter<'result'>;
  readonly open: Gauge;
  readonly limited: Counter<'limit'>;
  readonly ended: Counter<'reason'>;
  readonly tokenReviews: Counter<'result'>;
  readonly encodings: Counter<'form'>;
  readonly pushBytes: Counter<'form'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.connected = new Gauge({ name: 'tollgate_controller_stream_proxies', help: 'Proxies connected to the snapshot stream, by Gateway', labelNames: ['gateway'], registers });
    this.desired = new Gauge({
      name: 'tollgate_controller_stream_desired_version_info',
      help: 'The version the stream sends for each Gateway (value 1)',
      labelNames: ['gateway', 'version'],
      registers,
    });
    this.acked = new Gauge({
      name: 'tollgate_controller_stream_acked_proxies',
      help: 'Connected proxies whose last ACKed version is this one, by Gateway and version',
      labelNames: ['gateway', 'version'],
      registers,
    });
    this.pushLatency = new Histogram({
      name: 'tollgate_controller_stream_push_seconds',
      help: 'From sending a snapshot to its ACK, by Gateway',
      labelNames: ['gateway'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.answers = new Counter({
      name: 'tollgate_controller_stream_answers_total',
      help: 'Answers to snapshot pushes, by Gateway and answer (ack, nack, nack_delta: a delta the proxy asked again in full, timeout)',
      labelNames: ['gateway', 'answer'],
      registers,
    });
    this.auth = new Counter({
      name: 'tollgate_controller_stream_auth_total',
      help: 'Stream openings by authentication result (ok, unauthenticated, permission_denied, unavailable, throttled: too many new tokens to review now)',
      labelNames: ['result'],
      registers,
    });
    const counter = <L extends string>(name: string, help: string, label: L) => new Counter<L>({ name, help, labelNames: [label], registers });
    this.reauth = counter('tollgate_controller_stream_reauth_total', 'Re-checks of open streams by result (ok; unauthenticated, permission_denied: the stream is ended; unavailable: kept until the next check)', 'result');
    this.open = new Gauge({ name: 'tollgate_controller_stream_open', help: 'Snapshot streams open, admitted or not yet (authenticating, waiting for a hello)', registers });
    this.limited = counter('tollgate_controller_stream_limited_total', 'Streams refused for a bound, by limit (streams, pending_per_peer: too many not yet admitted from one address, streams_per_gateway, messages: too many sent ahead of the answers, hello: a field out of bounds)', 'limit');
    this.ended = counter('tollgate_controller_stream_ended_total', 'Admitted streams the controller ended, by reason (max_age, token_expired, reauth_refused); the proxy reconnects', 'reason');
    this.tokenReviews = counter(
      'tollgate_controller_stream_token_reviews_total',
      'TokenReviews of proxy tokens by result (new: a token not in the cache; recheck: an open stream re-authenticated; throttled: not made, over --snapshot-token-reviews-per-second)',
      'result',
    );
    this.encodings = new Counter({
      name: 'tollgate_controller_stream_encodings_total',
      help: 'Snapshot payloads encoded, by form (full, delta); each is sent to every proxy it fits',
      labelNames: ['form'],
      registers,
    });
    this.pushBytes = new Counter({
      name: 'tollgate_controller_stream_push_bytes_total',
      help: 'Bytes of snapshot payloads sent to proxies, by form (full, delta)',
      labelNames: ['form'],
      registers,
    });
  }

  /** Counts a proxy's answer (the one place answers are counted: forget() walks ANSWERS). */
  answered(gateway: string, answer: StreamAnswer): void {
    this.answers.inc({ gateway, answer });
  }

  /** The versions the stream sends now, one per Gateway (the series of versions no longer sent go). */
  desiredVersions(entries: readonly { readonly gateway: string; readonly version: string }[]): void {
    this.desired.reset();
    for (const e of entries) this.desired.set({ gateway: e.gateway, version: e.version }, 1);
  }

  /**
   * Drops a Gateway's series: called once it is gone from the store and no proxy of it is
   * connected, so deleted Gateways do not stay in every scrape (nor in memory) for good.
   */
  forget(gateway: string): void {
    this.connected.remove({ gateway });
    this.pushLatency.remove({ gateway });
    for (const answer of ANSWERS) this.answers.remove({ gateway, answer });
  }
}

/** The `answer` label's values (tollgate_controller_stream_answers_total). */
const ANSWERS = ['ack', 'nack', 'nack_delta', 'timeout'] as const;
type StreamAnswer = (typeof ANSWERS)[number];
