// The snapshot stream (proto/snapshots.proto in @tollgate/api): every proxy holds one stream
// for its Gateway and is sent that Gateway's current snapshot from the store, in the manner
// of xDS state of the world. Per stream at most one push is unanswered: a newer version waits
// until the proxy ACKs or NACKs the last push or the answer times out. A NACKed version is
// not sent again to that proxy; the next different version is.
//
// A push is a delta when the proxy takes them (its hello says so) and holds a version whose
// routes the controller still knows (the version it ACKed or announced): routes unchanged
// since are sent as their positions in it, so a one-route change costs one route's text
// whatever the Gateway's size. Otherwise (a proxy that has nothing, or a version no proxy of
// the Gateway holds any longer), and always after a NACK, the push is the full form. Each
// payload is encoded once per (version, base) and sent to every proxy it fits; the controller
// keeps a version's routes only while it is current or some connected proxy holds it.
//
// Security (stream-auth.ts): with TLS (the default) every stream is authenticated before its
// hello is served: the proxy's token must belong to the ServiceAccount of the Gateway it
// names, and it is checked again while the stream lives (stream-lifetime.ts). Plaintext
// (development) serves anyone who reaches the port.
//
// Bounds (stream-limits.ts): message size, streams open at once and per Gateway, messages
// waiting per stream, the hello's fields (hello.ts), stream and connection age; client-chosen
// values are logged clipped, and refusals at most once a second per kind (throttled-log.ts).
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { encodeSnapshotDelta, encodeSnapshotParts, routePositions, type ProxySnapshot, type RouteIR, type SnapshotParts } from '@tollgate/api';
import { PreparedPayload, RECONNECT_TRAILER, SNAPSHOT_SERVICE, type OutgoingPush, type ProxyMessage } from '@tollgate/api/snapshot-stream';
import type { Logger } from 'pino';
import { formatHostPort, type HostPort } from '../options.js';
import type { Runnable } from '../runtime/runnable.js';
import type { SnapshotStore } from './store.js';
import { clip } from './clip.js';
import { helloProblem } from './hello.js';
import { bearerToken, type StreamAuthenticator } from './stream-auth.js';
import { StreamLifetime, type EndReason } from './stream-lifetime.js';
import { DEFAULT_STREAM_LIMITS, MAX_PENDING_PER_PEER, MAX_QUEUED_MESSAGES, grpcServerOptions, type StreamLimits } from './stream-limits.js';
import type { StreamMetrics } from './stream-metrics.js';
import { ThrottledLog } from './throttled-log.js';

export interface ProxyView {
  readonly pod: string;
  readonly podNamespace: string;
  readonly peer: string;
  readonly connectedSince: string;
  /** The version the proxy last ACKed (or said it serves when it connected); null: none. */
  readonly ackedVersion: string | null;
  /** The version sent and not yet answered. */
  readonly pending: string | null;
  readonly lastNack: { readonly version: string; readonly error: string; readonly at: string } | null;
}

export interface NackReport {
  readonly gateway: string;
  readonly pod: string;
  readonly version: string;
  readonly error: string;
}

export type StreamSecurity =
  | { readonly kind: 'plaintext' }
  | {
      readonly kind: 'tls';
      /** Read at start (the serving certificate may be made by then only). */
      readonly credentials: () => grpc.ServerCredentials;
      readonly auth: StreamAuthenticator;
    };

export interface StreamServerOptions {
  readonly addr: HostPort;
  /** Default plaintext (tests of the protocol); the controller passes TLS unless told otherwise. */
  readonly security?: StreamSecurity;
  readonly store: SnapshotStore;
  readonly metrics: StreamMetrics;
  readonly log: Logger;
  /** How long a push may stay unanswered before a newer one may be sent (default 15 s). */
  readonly answerTimeoutMs?: number;
  /** How long a new stream may stay without its hello (default 15 s). */
  readonly helloTimeoutMs?: number;
  /** How long stop() lets open streams finish before cutting them (default 5 s). */
  readonly shutdownGraceMs?: number;
  /** Bounds (DEFAULT_STREAM_LIMITS for what is not given). */
  readonly limits?: Partial<StreamLimits>;
  /** A proxy refused a version. */
  readonly onNack?: (r: NackReport) => void;
  /** A Gateway became rejected (a NACK) or stopped being so (see rejection()). */
  readonly onRejectionChange?: (gateway: string) => void;
  /** A proxy of the Gateway connected, ACKed a version or went away (Programmed depends on it). */
  readonly onProxiesChange?: (gateway: string) => void;
  /** Called with the bound address. */
  readonly listening?: (address: string) => void;
}

type Call = grpc.ServerDuplexStream<ProxyMessage, OutgoingPush>;

/** A version a proxy may hold, kept to encode deltas against it. */
interface Base {
  readonly snapshot: ProxySnapshot;
  /** routePositions(snapshot), made when a delta first needs it. */
  positions: Map<RouteIR, number> | null;
}

/** The payloads of a Gateway's current version: the full form, and a delta per base version. */
interface Encoded {
  readonly version: string;
  full: PreparedPayload | null;
  readonly deltas: Map<string, PreparedPayload>;
}

interface Pending {
  readonly version: string;
  readonly nonce: string;
  readonly form: 'full' | 'delta';
  readonly sentAt: bigint;
  readonly timer: NodeJS.Timeout;
}

class ProxyStream {
  acked: string | null;
  pending: Pending | null = null;
  /** The last version this proxy refused: not sent to it again. */
  nacked: { version: string; error: string; at: Date } | null = null;
  /** After a NACK the next push is the full form (the proxy may not hold what a delta names). */
  fullNext = false;
  readonly since = new Date();
  /** Set once admitted: its re-checks, token expiry and age. */
  lifetime: StreamLifetime | null = null;

  constructor(
    readonly call: Call,
    readonly gateway: string,
    readonly pod: string,
    readonly podNamespace: string,
    version: string,
    /** The proxy said it resolves deltas (an older proxy is sent the full form only). */
    readonly deltas: boolean,
  ) {
    this.acked = version === '' ? null : version;
  }

  view(): ProxyView {
    return {
      pod: this.pod,
      podNamespace: this.podNamespace,
      peer: this.call.getPeer(),
      connectedSince: this.since.toISOString(),
      ackedVersion: this.acked,
      pending: this.pending?.version ?? null,
      lastNack: this.nacked && { version: this.nacked.version, error: this.nacked.error, at: this.nacked.at.toISOString() },
    };
  }
}

export class SnapshotStreamServer implements Runnable {
  readonly name = 'snapshot-server';
  readonly needsLeader = false;
  readonly #o: StreamServerOptions;
  readonly #timeoutMs: number;
  readonly #security: StreamSecurity;
  readonly #helloTimeoutMs: number;
  readonly #shutdownGraceMs: number;
  readonly #limits: StreamLimits;
  readonly #warn: ThrottledLog;
  #server: grpc.Server | null = null;
  readonly #streams = new Set<ProxyStream>();
  /** Admitted streams per Gateway. */
  readonly #perGateway = new Map<string, number>();
  /** Streams open, admitted or not (authenticating, waiting for a hello). */
  #openStreams = 0;
  /** Streams not yet admitted, by peer address (without its port). */
  readonly #pendingByPeer = new Map<string, number>();
  /** The payloads of each Gateway's current version: encoded once, sent to every proxy. */
  readonly #encoded = new Map<string, Encoded>();
  /** Per Gateway, the versions a delta may be relative to. */
  readonly #bases = new Map<string, Map<string, Base>>();
  #port = 0;
  /**
   * Gateways a proxy refused a snapshot of: they stay rejected until a version other than the
   * refused one is ACKed by every proxy connected for the Gateway.
   */
  readonly #rejected = new Map<string, { version: string; pod: string; error: string }>();

  constructor(o: StreamServerOptions) {
    this.#o = o;
    this.#timeoutMs = o.answerTimeoutMs ?? 15_000;
    this.#security = o.security ?? { kind: 'plaintext' };
    this.#helloTimeoutMs = o.helloTimeoutMs ?? 15_000;
    this.#shutdownGraceMs = o.shutdownGraceMs ?? 5_000;
    this.#limits = { ...DEFAULT_STREAM_LIMITS, ...o.limits };
    this.#warn = new ThrottledLog(o.log);
    o.store.onChange((r) => {
      for (const g of r.removed) {
        this.#encoded.delete(g);
        this.#bases.delete(g);
        this.#forgetIfGone(g);
      }
      for (const s of this.#streams) if (r.changed.includes(s.gateway)) this.#push(s);
      this.#updateDesired();
    });
  }

  /** The bound port (after start). */
  get port(): number {
    return this.#port;
  }

  /** Why the Gateway's snapshot is rejected, while it is (see #rejected). */
  rejection(gateway: string): { readonly version: string; readonly pod: string; readonly error: string } | undefined {
    return this.#rejected.get(gateway);
  }

  /** Connected proxies, by Gateway (sorted). */
  proxies(): Map<string, ProxyView[]> {
    const out = new Map<string, ProxyView[]>();
    for (const s of [...this.#streams].sort((a, b) => (a.pod < b.pod ? -1 : a.pod > b.pod ? 1 : 0))) {
      const list = out.get(s.gateway) ?? [];
      list.push(s.view());
      out.set(s.gateway, list);
    }
    return out;
  }

  async start(): Promise<void> {
    const server = new grpc.Server(grpcServerOptions(this.#limits));
    server.addService(SNAPSHOT_SERVICE, { Stream: (call: Call) => this.#open(call) });
    const address = formatHostPort({ host: this.#o.addr.host || '0.0.0.0', port: this.#o.addr.port });
    this.#port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(address, this.#security.kind === 'tls' ? this.#security.credentials() : grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
    );
    this.#server = server;
    this.#updateDesired();
    this.#o.listening?.(formatHostPort({ host: this.#o.addr.host, port: this.#port }));
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const s of this.#streams) this.#close(s);
    if (!server) return;
    // tryShutdown waits for every open stream to finish, and a stream the controller holds no
    // record of (still authenticating, or without its hello) or a client that never closes its
    // side would hold it forever: after the grace period the rest are cut.
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.#o.log.warn({ graceMs: this.#shutdownGraceMs }, 'snapshot streams still open after the grace period; cutting them');
        server.forceShutdown();
        resolve();
      }, this.#shutdownGraceMs);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }

  #open(call: Call): void {
    let stream: ProxyStream | null = null;
    let gone = false;
    // Messages are handled in order; a hello waits for its authentication, and what follows it
    // waits with it.
    let queue: Promise<void> = Promise.resolve();
    let queued = 0;
    const peer = peerAddress(call.getPeer());
    let pending = false;
    const admitted = () => {
      if (!pending) return;
      pending = false;
      const left = (this.#pendingByPeer.get(peer) ?? 1) - 1;
      if (left > 0) this.#pendingByPeer.set(peer, left);
      else this.#pendingByPeer.delete(peer);
    };
    // A connection that never says hello holds nothing for long.
    const helloTimer = setTimeout(() => {
      if (!stream && !gone) this.#fail(call, null, grpc.status.DEADLINE_EXCEEDED, `no hello within ${this.#helloTimeoutMs}ms`);
    }, this.#helloTimeoutMs);
    helloTimer.unref();
    const end = () => {
      if (gone) return;
      gone = true;
      this.#openStreams--;
      this.#o.metrics.open.set(this.#openStreams);
      admitted();
      clearTimeout(helloTimer);
      if (stream) this.#close(stream);
    };
    call.on('end', end);
    call.on('cancelled', end);
    call.on('error', end);
    this.#openStreams++;
    this.#o.metrics.open.set(this.#openStreams);
    if (this.#openStreams > this.#limits.maxStreams) {
      return this.#refuse(call, 'streams', grpc.status.RESOURCE_EXHAUSTED, `the controller serves at most ${this.#limits.maxStreams} streams at once (--snapshot-max-streams); retry later`);
    }
    const waiting = this.#pendingByPeer.get(peer) ?? 0;
    if (waiting >= MAX_PENDING_PER_PEER) {
      return this.#refuse(call, 'pending_per_peer', grpc.status.RESOURCE_EXHAUSTED, `${waiting} streams from ${peer} are waiting to be admitted, the most one address may have; retry later`);
    }
    this.#pendingByPeer.set(peer, waiting + 1);
    pending = true;
    call.on('data', (m: ProxyMessage) => {
      if (gone) return;
      if (++queued > MAX_QUEUED_MESSAGES) {
        return this.#refuse(call, 'messages', grpc.status.RESOURCE_EXHAUSTED, `more than ${MAX_QUEUED_MESSAGES} messages sent ahead of the controller's answers; a proxy sends its hello, then one answer per push`, stream);
      }
      queue = queue.then(async () => {
        try {
          if (!gone) stream = (await this.#message(call, stream, m, () => gone)) ?? stream;
          if (stream && !gone) {
            clearTimeout(helloTimer);
            admitted();
          }
        } catch (err) {
          // A bug ends this stream only; the proxy reconnects.
          this.#o.log.error({ gateway: stream?.gateway, pod: stream?.pod, err: String(err) }, 'snapshot stream failed');
          if (!gone) this.#fail(call, stream, grpc.status.INTERNAL, 'the controller failed to handle a message; reconnect');
        } finally {
          queued--;
        }
      });
    });
  }

  /** One message of a stream, in order; returns the stream its hello opened. */
  async #message(call: Call, stream: ProxyStream | null, m: ProxyMessage, gone: () => boolean): Promise<ProxyStream | undefined> {
    if (!('hello' in m)) {
      if (!stream) return this.#fail(call, null, grpc.status.INVALID_ARGUMENT, 'the first message of a stream is a hello naming the Gateway');
      if ('ack' in m) this.#ack(stream, m.ack.version, m.ack.nonce);
      else this.#nack(stream, m.nack.nonce, m.nack.error, m.nack.wantFull === true);
      return;
    }
    if (stream) return this.#fail(call, stream, grpc.status.INVALID_ARGUMENT, 'hello sent twice; a stream serves one Gateway');
    const h = m.hello;
    const problem = helloProblem(h);
    if (problem) return this.#refuse(call, 'hello', grpc.status.INVALID_ARGUMENT, problem);
    const who = h.pod || call.getPeer();
    let token: string | undefined;
    if (this.#security.kind === 'tls') {
      token = bearerToken(call.metadata.get('authorization'));
      const decision = await this.#security.auth.check(token, h.gateway);
      this.#o.metrics.auth.inc({ result: decision.ok ? 'ok' : decision.result });
      if (gone()) return;
      if (!decision.ok) {
        this.#warn.warn(`refused:${decision.result}`, { gateway: h.gateway, pod: h.pod, peer: call.getPeer(), code: 'TG_CONTROLLER_STREAM_REFUSED', status: grpc.status[decision.code] }, `snapshot stream of ${h.gateway} refused to ${who}: ${grpc.status[decision.code]}: ${decision.message}`);
        return this.#fail(call, null, decision.code, decision.message);
      }
    }
    const open = this.#perGateway.get(h.gateway) ?? 0;
    if (open >= this.#limits.maxStreamsPerGateway) {
      return this.#refuse(call, 'streams_per_gateway', grpc.status.RESOURCE_EXHAUSTED, `Gateway ${h.gateway} has ${open} streams open, the most one Gateway may have (--snapshot-max-streams-per-gateway); retry later`);
    }
    const s = new ProxyStream(call, h.gateway, who, h.podNamespace, h.version, h.deltas === true);
    this.#streams.add(s);
    this.#perGateway.set(s.gateway, open + 1);
    s.lifetime = this.#lifetime(s, token);
    this.#o.metrics.connected.inc({ gateway: s.gateway });
    if (s.acked) this.#o.metrics.acked.inc({ gateway: s.gateway, version: s.acked });
    this.#o.log.info({ gateway: s.gateway, pod: s.pod, version: h.version || null }, 'proxy connected');
    this.#o.onProxiesChange?.(s.gateway);
    // Headers now tell the proxy its hello was accepted, even when nothing is to be sent.
    call.sendMetadata(new grpc.Metadata());
    this.#push(s);
    return s;
  }

  #lifetime(s: ProxyStream, token: string | undefined): StreamLifetime {
    const sec = this.#security;
    return new StreamLifetime({
      maxAgeMs: this.#limits.maxStreamAgeMs,
      ...(sec.kind === 'tls'
        ? {
            reauth: {
              token,
              intervalMs: this.#limits.reauthIntervalMs,
              check: () => sec.auth.check(token, s.gateway, { fresh: true }),
              checked: (d) => {
                this.#o.metrics.reauth.inc({ result: d.ok ? 'ok' : d.result });
                if (!d.ok && d.code === grpc.status.UNAVAILABLE) this.#o.log.debug({ gateway: s.gateway, pod: s.pod, err: d.message }, 'stream not re-authenticated now; kept until the next check');
              },
            },
          }
        : {}),
      end: (reason, code, message) => this.#end(s, reason, code, message),
    });
  }

  /** The controller ends an admitted stream; the proxy keeps serving and reconnects. */
  #end(s: ProxyStream, reason: EndReason, code: grpc.status, message: string): void {
    if (!this.#streams.has(s)) return;
    this.#o.metrics.ended.inc({ reason });
    const fields = { gateway: s.gateway, pod: s.pod, reason, status: grpc.status[code] };
    if (reason === 'reauth_refused') this.#o.log.warn({ ...fields, code: 'TG_CONTROLLER_STREAM_REFUSED' }, `snapshot stream of ${s.gateway} to ${s.pod} ended: ${grpc.status[code]}: ${message}`);
    else this.#o.log.info(fields, `snapshot stream of ${s.gateway} to ${s.pod} ended: ${message}`);
    // A planned end (age, the token's expiry): the proxy reconnects at once, without backoff.
    const trailers = new grpc.Metadata();
    if (reason !== 'reauth_refused') trailers.set(RECONNECT_TRAILER, reason);
    this.#fail(s.call, s, code, message, trailers);
  }

  /** A bound reached: counted, logged (throttled), and the stream ended with `code`. */
  #refuse(call: Call, limit: 'streams' | 'pending_per_peer' | 'streams_per_gateway' | 'messages' | 'hello', code: grpc.status, message: string, stream: ProxyStream | null = null): undefined {
    this.#o.metrics.limited.inc({ limit });
    this.#warn.warn(`limit:${limit}`, { limit, peer: call.getPeer(), code: 'TG_CONTROLLER_STREAM_REFUSED', status: grpc.status[code] }, `snapshot stream refused to ${call.getPeer()}: ${grpc.status[code]}: ${message}`);
    return this.#fail(call, stream, code, message);
  }

  #fail(call: Call, stream: ProxyStream | null, code: grpc.status, details: string, metadata?: grpc.Metadata): undefined {
    if (stream) this.#close(stream, false);
    // grpc-js ends a server stream with the status (and trailers) of the error emitted on it.
    call.emit('error', Object.assign(new Error(details), { code, details, ...(metadata ? { metadata } : {}) }));
    return undefined;
  }

  #close(s: ProxyStream, endCall = true): void {
    if (!this.#streams.delete(s)) return;
    s.lifetime?.stop();
    const left = (this.#perGateway.get(s.gateway) ?? 1) - 1;
    if (left > 0) this.#perGateway.set(s.gateway, left);
    else this.#perGateway.delete(s.gateway);
    if (s.pending) clearTimeout(s.pending.timer);
    s.pending = null;
    this.#o.metrics.connected.dec({ gateway: s.gateway });
    if (s.acked) this.#releaseAcked(s.gateway, s.acked);
    this.#o.log.info({ gateway: s.gateway, pod: s.pod }, 'proxy disconnected');
    this.#sweep(s.gateway);
    this.#forgetIfGone(s.gateway);
    if (endCall) s.call.end();
    this.#o.onProxiesChange?.(s.gateway);
    // The proxy that held a rejection back may be the one gone.
    if ([...this.#streams].some((o) => o.gateway === s.gateway)) this.#maybeClearRejection(s.gateway);
  }

  #push(s: ProxyStream): void {
    if (s.pending || !this.#streams.has(s)) return;
    const entry = this.#o.store.get(s.gateway);
    if (!entry || entry.version === s.acked || entry.version === s.nacked?.version) return;
    let enc = this.#encoded.get(s.gateway);
    if (enc?.version !== entry.version) {
      enc = { version: entry.version, full: null, deltas: new Map() };
      this.#encoded.set(s.gateway, enc);
    }
    let bases = this.#bases.get(s.gateway);
    if (!bases) this.#bases.set(s.gateway, (bases = new Map<string, Base>()));
    if (!bases.has(entry.version)) bases.set(entry.version, { snapshot: entry.snapshot, positions: null });
    const base = s.deltas && s.acked !== null && !s.fullNext ? bases.get(s.acked) : undefined;
    let payload: PreparedPayload;
    if (base && s.acked !== null) {
      let delta = enc.deltas.get(s.acked);
      if (!delta) {
        base.positions ??= routePositions(base.snapshot);
        delta = this.#prepare(encodeSnapshotDelta(entry.snapshot, { version: s.acked, positions: base.positions }), 'delta');
        enc.deltas.set(s.acked, delta);
      }
      payload = delta;
    } else {
      payload = enc.full ??= this.#prepare(encodeSnapshotParts(entry.snapshot), 'full');
    }
    this.#o.metrics.pushBytes.inc({ form: base ? 'delta' : 'full' }, payload.bytes.length);
    s.fullNext = false;
    const nonce = randomBytes(8).toString('hex');
    const timer = setTimeout(() => this.#timeout(s, nonce), this.#timeoutMs);
    timer.unref();
    s.pending = { version: entry.version, nonce, form: base ? 'delta' : 'full', sentAt: process.hrtime.bigint(), timer };
    this.#sweep(s.gateway);
    s.call.write({ version: entry.version, nonce, payload });
  }

  #prepare(parts: SnapshotParts, form: 'full' | 'delta'): PreparedPayload {
    this.#o.metrics.encodings.inc({ form });
    return new PreparedPayload({
      snapshot: Buffer.from(parts.skeleton, 'utf8'),
      routes: parts.routes.map((r) => Buffer.from(r, 'utf8')),
      routeCounts: parts.routeCounts,
      baseVersion: parts.base?.version ?? '',
      routeRefs: parts.base?.refs ?? [],
    });
  }

  /** Drops the Gateway's base versions that are not current and that no connected proxy holds or is being sent. */
  #sweep(gateway: string): void {
    const bases = this.#bases.get(gateway);
    if (!bases) return;
    const keep = new Set<string | null | undefined>([this.#o.store.get(gateway)?.version]);
    for (const o of this.#streams) {
      if (o.gateway !== gateway) continue;
      keep.add(o.acked);
      keep.add(o.pending?.version);
    }
    for (const v of bases.keys()) if (!keep.has(v)) bases.delete(v);
    if (!bases.size) this.#bases.delete(gateway);
  }

  /** Versions kept as delta bases, by Gateway (tests: they must not pile up). */
  baseVersions(gateway: string): string[] {
    return [...(this.#bases.get(gateway)?.keys() ?? [])];
  }

  #timeout(s: ProxyStream, nonce: string): void {
    if (s.pending?.nonce !== nonce) return;
    this.#o.log.warn({ gateway: s.gateway, pod: s.pod, version: s.pending.version }, `proxy did not answer within ${this.#timeoutMs}ms; sending the current version`);
    this.#o.metrics.answered(s.gateway, 'timeout');
    s.pending = null;
    // The same version is sent again (with a new nonce) when it is still the current one.
    const current = this.#o.store.get(s.gateway);
    if (current && current.version !== s.acked) this.#push(s);
  }

  #ack(s: ProxyStream, version: string, nonce: string): void {
    const p = s.pending;
    if (!p || p.nonce !== nonce || p.version !== version) {
      this.#o.log.debug({ gateway: s.gateway, pod: s.pod, version: clip(version), nonce: clip(nonce) }, 'stale or unknown ACK ignored');
      return;
    }
    clearTimeout(p.timer);
    s.pending = null;
    const previous = s.acked;
    s.acked = version;
    s.nacked = null;
    if (previous) this.#releaseAcked(s.gateway, previous);
    this.#o.metrics.acked.inc({ gateway: s.gateway, version });
    this.#o.metrics.answered(s.gateway, 'ack');
    this.#o.metrics.pushLatency.observe({ gateway: s.gateway }, Number(process.hrtime.bigint() - p.sentAt) / 1e9);
    this.#o.log.debug({ gateway: s.gateway, pod: s.pod, version }, 'snapshot acknowledged');
    this.#maybeClearRejection(s.gateway);
    this.#o.onProxiesChange?.(s.gateway);
    this.#sweep(s.gateway);
    this.#push(s);
  }

  #nack(s: ProxyStream, nonce: string, error: string, wantFull: boolean): void {
    const p = s.pending;
    if (!p || p.nonce !== nonce) {
      this.#o.log.debug({ gateway: s.gateway, pod: s.pod, nonce: clip(nonce) }, 'stale or unknown NACK ignored');
      return;
    }
    clearTimeout(p.timer);
    s.pending = null;
    const message = error.slice(0, 2048) || 'no reason given';
    s.fullNext = true;
    if (wantFull && p.form === 'delta') {
      // The proxy does not hold what the delta names (it applied a push whose answer was lost,
      // say): the same version goes again in full; this is no refusal of the snapshot.
      this.#o.metrics.answered(s.gateway, 'nack_delta');
      this.#o.log.info({ gateway: s.gateway, pod: s.pod, version: p.version, error: message }, `proxy ${s.pod} could not take snapshot ${p.version} as a delta (${message}); sending it in full`);
      this.#push(s);
      return;
    }
    s.nacked = { version: p.version, error: message, at: new Date() };
    this.#o.metrics.answered(s.gateway, 'nack');
    this.#o.log.warn({ gateway: s.gateway, pod: s.pod, version: p.version, error: message }, `proxy ${s.pod} refused snapshot ${p.version}: ${message}`);
    this.#o.onNack?.({ gateway: s.gateway, pod: s.pod, version: p.version, error: message });
    const was = this.#rejected.get(s.gateway);
    this.#rejected.set(s.gateway, { version: p.version, pod: s.pod, error: message });
    if (was?.version !== p.version || was.error !== message) this.#o.onRejectionChange?.(s.gateway);
    this.#push(s);
  }

  /** A rejection ends once every connected proxy of the Gateway ACKed a version other than the refused one. */
  #maybeClearRejection(gateway: string): void {
    const r = this.#rejected.get(gateway);
    if (!r) return;
    for (const s of this.#streams) {
      if (s.gateway === gateway && (s.acked === null || s.acked === r.version || s.nacked !== null)) return;
    }
    this.#rejected.delete(gateway);
    this.#o.onRejectionChange?.(gateway);
  }

  /**
   * One proxy fewer holds `version` (it ACKed another or went away). The series of a version
   * no connected proxy holds is removed: kept at 0, the registry would gain a series with every
   * version ever served, and under a steady stream of changes grow without bound.
   */
  #releaseAcked(gateway: string, version: string): void {
    for (const o of this.#streams) {
      if (o.gateway === gateway && o.acked === version) {
        this.#o.metrics.acked.dec({ gateway, version });
        return;
      }
    }
    this.#o.metrics.acked.remove({ gateway, version });
  }

  /**
   * A Gateway deleted from the store whose last proxy has gone: its metric series and any
   * rejection are dropped (a Gateway created again under the name starts clean).
   */
  #forgetIfGone(gateway: string): void {
    if (this.#o.store.get(gateway)) return;
    for (const s of this.#streams) if (s.gateway === gateway) return;
    this.#o.metrics.forget(gateway);
    this.#rejected.delete(gateway);
  }

  #updateDesired(): void {
    this.#o.metrics.desired.reset();
    for (const e of this.#o.store.entries()) this.#o.metrics.desired.set({ gateway: e.gateway, version: e.version }, 1);
  }
}

/** `ipv4:10.0.0.7:51234` -> `10.0.0.7`, `ipv6:[::1]:51234` -> `::1`: the client's address without its port. */
function peerAddress(peer: string): string {
  const m = /^(?:ipv[46]:)?\[?([^\]]*?)\]?:\d+$/.exec(peer);
  return m?.[1] ?? peer;
}
