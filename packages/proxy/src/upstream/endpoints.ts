// Per-endpoint state: one object per upstream address (`<address>:<port>`), shared by every
// backend and every snapshot that names it. It holds the endpoint's connection pool, its
// requests in flight, moving averages of its latency and of its failures, and its ejection
// after a failed connect. The balancer reads it on every pick, so a pick is a few field reads
// and no lookup: compiled pickers keep references to these objects.
//
// A new snapshot keeps the objects of the endpoints it still lists (warm connections, learned
// scores) and retires the others: a retired endpoint closes its pool once its last request in
// flight is done, so a change of endpoints never cuts a request.
import type { BackendProtocolIR, BackendTLSIR } from '@tollgate/api';
import type { DnsCache } from './dns-cache.js';
import { Pool } from './undici-pool.js';
import type { Clock } from '../ratelimit/clock.js';
import { hostPort } from './host-port.js';
import { tlsConnector, tlsSettingKey } from './backend-tls.js';
import { h2TlsConnector } from './h2-tls.js';

/**
 * The table's key of an endpoint: its address, for TLS a digest of the setting, and the HTTP/2
 * protocol when not HTTP/1.1, so that each distinct way of speaking to one address has a pool
 * (and scores) of its own.
 */
export function endpointKey(host: string, port: number, tls?: BackendTLSIR, protocol?: BackendProtocolIR): string {
  return hostPort(host, port) + endpointKeySuffix(tls, protocol);
}

/** What endpointKey() puts after the address for this TLS setting and protocol ('' for plain HTTP/1.1). */
export function endpointKeySuffix(tls?: BackendTLSIR, protocol?: BackendProtocolIR): string {
  if (tls) return `#tls-${tlsSettingKey(tls)}${protocol ? `-${protocol}` : ''}`;
  return protocol ? `#${protocol}` : '';
}

/** Weight of the newest sample in the moving averages. */
export const EMA_ALPHA = 0.1;
/**
 * Latencies below this count as equal. LLM calls take hundreds of milliseconds; differences of
 * a few milliseconds between endpoints are noise, and treating them as equal lets least-request
 * (and round robin on ties) decide instead of chasing jitter.
 */
export const LATENCY_FLOOR_MS = 10;
/**
 * What was learned fades with this half-life while an endpoint gets no samples: an endpoint
 * that was slow or failing is not avoided forever on old evidence, it is tried again.
 */
export const DECAY_HALF_LIFE_MS = 10_000;
/** Each failure weighs this much in the cost (cost x (1 + FAILURE_WEIGHT x failure average)). */
export const FAILURE_WEIGHT = 4;
/** First ejection after a failed connect; doubles with each consecutive one, up to the cap. */
export const EJECTION_BASE_MS = 1_000;
export const EJECTION_MAX_MS = 30_000;

/**
 * How a call through an endpoint ended, as the balancer weighs it: `ok` (a response below 500),
 * `error` (a 5xx or a transport failure after connecting), `connect-failure` (refused,
 * unreachable, connect timeout: the endpoint is ejected), `abandoned` (the client left: says
 * nothing of the endpoint).
 */
export type CallOutcome = 'ok' | 'error' | 'connect-failure' | 'abandoned';

export interface EndpointOptions {
  readonly connectTimeoutMs: number;
  readonly clock: Clock;
  /** Resolves the host names of Backend resources (cached, TTL-bounded); absent: the system's resolver at each connect. */
  readonly dns?: DnsCache;
}

/** What `gwctl config backends` shows of one endpoint. */
export interface EndpointView {
  readonly address: string;
  /** 1 minus the failure average (faded by time): 1 = every recent call succeeded. */
  readonly health: number;
  readonly requests: number;
  /** Moving average of the time to the response headers, ms (0 before the first response). */
  readonly latencyMs: number;
  readonly inFlight: number;
  /** ISO time until which the endpoint is avoided after a failed connect, or null. */
  readonly ejectedUntil: string | null;
}

/**
 * The endpoints as the process sees them, by endpointKey(), from each thread's views (each thread
 * has its own pools and scores): requests and requests in flight add up; health and latency are
 * the threads' moving averages weighted by the calls each made; ejected until the latest
 * ejection of any thread (that thread avoids the endpoint until then).
 */
export function mergedEndpointViews(parts: Iterable<readonly (readonly [string, EndpointView])[]>): Map<string, EndpointView> {
  const byKey = new Map<string, EndpointView[]>();
  for (const part of parts) for (const [key, v] of part) byKey.set(key, [...(byKey.get(key) ?? []), v]);
  return new Map([...byKey].map(([key, views]) => [key, mergeViews(views)]));
}

function mergeViews(views: readonly EndpointView[]): EndpointView {
  if (views.length === 1) return views[0]!;
  const requests = views.reduce((n, v) => n + v.requests, 0);
  const weight = (v: EndpointView) => (requests > 0 ? v.requests / requests : 1 / views.length);
  const ejected = views.map((v) => v.ejectedUntil).filter((t) => t !== null);
  return {
    address: views[0]!.address,
    health: views.reduce((n, v) => n + v.health * weight(v), 0),
    requests,
    latencyMs: views.reduce((n, v) => n + v.latencyMs * weight(v), 0),
    inFlight: views.reduce((n, v) => n + v.inFlight, 0),
    ejectedUntil: ejected.length ? ejected.reduce((a, b) => (b > a ? b : a)) : null,
  };
}

export class Endpoint {
  readonly name: string;
  inFlight = 0;
  /** Calls completed (abandoned ones included). */
  requests = 0;
  /** Moving average of the latency, ms; 0 until the first sample (what gwctl shows). */
  latencyMs = 0;
  /**
   * The balancer's latency estimate, ms: the same average, but starting from the floor rather
   * than from the first sample (which pays the connection setup), and fading back to the floor.
   */
  estimateMs = LATENCY_FLOOR_MS;
  /** Moving average of failure (0 = none, 1 = every call failed). */
  failure = 0;
  /** Clock time of the last sample: where the fading of the averages starts. */
  sampledAt = 0;
  /** Clock time until which the endpoint is ejected (0: never was). */
  ejectedUntil = 0;
  /** Consecutive failed connects; each doubles the next ejection. */
  connectFailures = 0;
  #pool: Pool | null = null;
  /** The DNS cache's revision of the name when the pool was opened (resolved endpoints). */
  #poolRevision = 0;
  #retired = false;

  constructor(
    readonly host: string,
    readonly port: number,
    readonly options: EndpointOptions,
    /** Absent: plain HTTP. */
    readonly tls?: BackendTLSIR,
    /** Its host name is resolved through options.dns (a Backend resource's). */
    readonly resolved = false,
    /** Absent: HTTP/1.1. */
    readonly protocol?: BackendProtocolIR,
  ) {
    this.name = hostPort(host, port);
    this.servername = tls?.hostname;
  }

  /** What each request through a TLS pool says is its servername (see tlsConnector); undefined for plain HTTP. */
  readonly servername: string | undefined;

  get retired(): boolean {
    return this.#retired;
  }

  /** The connection pool, opened on first use (also again for a request of an older snapshot that picks a retired endpoint). */
  get pool(): Pool {
    const dns = this.resolved ? this.options.dns : undefined;
    if (dns) {
      // A new answer for the name: the old pool finishes what it carries and closes; the next
      // connection dials an address the name has now.
      const revision = dns.revision(this.host);
      if (this.#pool && revision !== this.#poolRevision) void this.#closePool();
      this.#poolRevision = revision;
    }
    if (!this.#pool) {
      const h = this.host.includes(':') ? `[${this.host}]` : this.host;
      const lookup = dns?.lookup;
      this.#pool = new Pool(`${this.tls ? 'https' : 'http'}://${h}:${this.port}`, {
        connectTimeout: this.options.connectTimeoutMs,
        // Per-request timeouts are set on each dispatch; these are the ceilings.
        headersTimeout: 0,
        bodyTimeout: 0,
        keepAliveTimeout: 30_000,
        ...connectionOptions(this.tls, this.protocol, this.options.connectTimeoutMs, lookup),
      });
    }
    return this.#pool;
  }

  /** Fraction of what was learned still in force `now` (1 right after a sample). */
  #fade(now: number): number {
    const age = now - this.sampledAt;
    return age <= 0 ? 1 : 2 ** (-age / DECAY_HALF_LIFE_MS);
  }

  /**
   * The balancer's cost of sending one more request here: (requests in flight + 1) x latency
   * x failure penalty; Infinity while ejected or retired. Lower is better.
   */
  cost(now: number): number {
    if (this.#retired || now < this.ejectedUntil) return Infinity;
    const fade = this.#fade(now);
    const latency = this.estimateMs > LATENCY_FLOOR_MS ? LATENCY_FLOOR_MS + (this.estimateMs - LATENCY_FLOOR_MS) * fade : LATENCY_FLOOR_MS;
    return (this.inFlight + 1) * latency * (1 + FAILURE_WEIGHT * this.failure * fade);
  }

  /** A request was sent here (counted until `end`). */
  begin(): void {
    this.inFlight++;
  }

  /** The request that `begin` counted is over. */
  end(outcome: CallOutcome, latencyMs: number): void {
    this.inFlight--;
    this.requests++;
    if (outcome !== 'abandoned') {
      const now = this.options.clock();
      // The averages fade towards neutral while no samples come; a new sample starts from the faded values.
      const fade = this.#fade(now);
      this.failure *= fade;
      if (this.estimateMs > LATENCY_FLOOR_MS) this.estimateMs = LATENCY_FLOOR_MS + (this.estimateMs - LATENCY_FLOOR_MS) * fade;
      this.sampledAt = now;
      this.failure += EMA_ALPHA * ((outcome === 'ok' ? 0 : 1) - this.failure);
      if (outcome === 'connect-failure') {
        // Requests sent before the ejection that fail after it do not lengthen it: one outage
        // counts once, however many requests it caught.
        if (now >= this.ejectedUntil) {
          this.connectFailures++;
          this.ejectedUntil = now + Math.min(EJECTION_BASE_MS * 2 ** (this.connectFailures - 1), EJECTION_MAX_MS);
        }
      } else {
        this.connectFailures = 0;
        // A failed connect has no latency worth averaging; anything that reached the endpoint has.
        this.latencyMs = this.latencyMs === 0 ? latencyMs : this.latencyMs + EMA_ALPHA * (latencyMs - this.latencyMs);
        this.estimateMs = Math.max(LATENCY_FLOOR_MS, this.estimateMs + EMA_ALPHA * (latencyMs - this.estimateMs));
      }
    }
    if (this.#retired && this.inFlight === 0) void this.#closePool();
  }

  /**
   * A hold that `begin` counted ends without a sample: an upgraded connection (a WebSocket) that
   * counted as a request in flight while open, whose length says nothing of the endpoint.
   */
  release(): void {
    this.inFlight--;
    if (this.#retired && this.inFlight === 0) void this.#closePool();
  }

  /** No snapshot lists this endpoint any more: its pool closes once nothing is in flight. */
  retire(): void {
    this.#retired = true;
    if (this.inFlight === 0) void this.#closePool();
  }

  #closePool(): Promise<void> {
    const pool = this.#pool;
    this.#pool = null;
    // Pool#close waits for requests already dispatched on it.
    return pool ? pool.close() : Promise.resolve();
  }

  /** Closes the pool now (process shutdown; requests still in flight finish first). */
  close(): Promise<void> {
    this.#retired = true;
    return this.#closePool();
  }

  view(): EndpointView {
    const now = this.options.clock();
    const fade = this.#fade(now);
    return {
      address: this.name,
      health: 1 - this.failure * fade,
      requests: this.requests,
      latencyMs: this.latencyMs,
      inFlight: this.inFlight,
      ejectedUntil: now < this.ejectedUntil ? new Date(this.ejectedUntil).toISOString() : null,
    };
  }
}

/** Every endpoint the running snapshots name, by address. */
export class EndpointTable {
  readonly #byName = new Map<string, Endpoint>();
  constructor(readonly options: EndpointOptions) {}

  /**
   * The endpoint at `host:port` with this TLS setting (or plain) and protocol (HTTP/1.1 when
   * absent), created on first mention; `resolved`: its name is looked up through options.dns.
   */
  acquire(host: string, port: number, tls?: BackendTLSIR, resolved = false, protocol?: BackendProtocolIR): Endpoint {
    const key = endpointKey(host, port, tls, protocol);
    let e = this.#byName.get(key);
    if (!e) this.#byName.set(key, (e = new Endpoint(host, port, this.options, tls, resolved, protocol)));
    return e;
  }

  /** By endpointKey(). */
  get(key: string): Endpoint | undefined {
    return this.#byName.get(key);
  }

  /** What /backends shows of each endpoint, by endpointKey(). */
  views(): [string, EndpointView][] {
    return [...this.#byName].map(([key, e]) => [key, e.view()]);
  }

  /** Retires the endpoints whose key (endpointKey()) is not in `keep` (their pools close once idle). */
  retain(keep: { has(name: string): boolean }): void {
    for (const [name, e] of this.#byName) {
      if (keep.has(name)) continue;
      this.#byName.delete(name);
      e.retire();
    }
  }

  /** Endpoints in the table (retired ones are not). */
  get size(): number {
    return this.#byName.size;
  }

  async close(): Promise<void> {
    const all = [...this.#byName.values()];
    this.#byName.clear();
    await Promise.allSettled(all.map((e) => e.close()));
  }
}

/**
 * How an endpoint's pool connects: HTTP/1.1 over TLS or in the clear, or HTTP/2: h2c (with prior
 * knowledge on a plain connection: undici's useH2c, which the connector reads, not the pool) or
 * h2 (over TLS, ALPN h2 alone: h2-tls.ts). Each client of an HTTP/2 pool is one session carrying
 * up to 100 requests at once (undici's default, lowered by the server's
 * SETTINGS_MAX_CONCURRENT_STREAMS); the pool opens another session when those are taken. The
 * timeouts, body streaming, header handling and the classification of failures (a connection
 * refused before the request was handed over is unsent) are the HTTP/1.1 path's: the same
 * dispatch (forward.ts).
 */
function connectionOptions(tls: BackendTLSIR | undefined, protocol: BackendProtocolIR | undefined, timeoutMs: number, lookup: DnsCache['lookup'] | undefined) {
  if (tls) return protocol === 'h2' ? { allowH2: true, connect: h2TlsConnector(tls, timeoutMs, lookup) } : { connect: tlsConnector(tls, timeoutMs, lookup) };
  if (protocol === 'h2c') return { allowH2: true, connect: { useH2c: true, ...(lookup ? { lookup } : {}) } };
  return lookup ? { connect: { lookup } } : {};
}

/** Catalog codes of failures to connect: the endpoint is not there (ejected for a while). */
const CONNECT_FAILURE_CODES: ReadonlySet<string> = new Set(['TG_UPSTREAM_REFUSED', 'TG_UPSTREAM_CONNECT_TIMEOUT', 'TG_UPSTREAM_UNRESOLVED']);

/** How the balancer weighs a finished call: its transport error code (or null) and status. */
export function callOutcome(errorKind: string | null, status: number, clientGone: boolean): CallOutcome {
  if (clientGone) return 'abandoned';
  if (errorKind === null) return status < 500 ? 'ok' : 'error';
  return CONNECT_FAILURE_CODES.has(errorKind) ? 'connect-failure' : 'error';
}
