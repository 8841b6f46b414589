// The snapshot stream (proto/snapshots.proto in @tollgate/api): every proxy holds one stream
// for its Gateway and is sent that Gateway's current snapshot from the store, in the manner of
// xDS state of the world. This file wires the parts and walks one stream through them:
//
//   stream-listener.ts  the gRPC server: bind, drain and cut at stop, connection age
//   stream-caps.ts      streams at once, not yet admitted per address, per Gateway
//   stream-gate.ts      authentication of the hello (TLS), re-authentication and age
//   proxy-fleet.ts      the admitted proxies: pushes, ACK/NACK (proxy-stream.ts), rejections
//   payload-cache.ts    the encoded payloads, full and delta, and the bases deltas refer to
//
// A stream opens (counted, capped), sends its hello (validated: hello.ts; authenticated), is
// admitted (capped per Gateway) and joins the fleet, which sends it the current version and
// every later one as the proxy answers. Client-chosen values are logged clipped, and refusals
// at most once a second per kind (throttled-log.ts).
import * as grpc from '@grpc/grpc-js';
import { RECONNECT_TRAILER, type ProxyMessage } from '@tollgate/api/snapshot-stream';
import type { Logger } from 'pino';
import type { HostPort } from '../runtime/host-port.js';
import type { Runnable } from '../runtime/runnable.js';
import { helloProblem } from './hello.js';
import { PayloadCache } from './payload-cache.js';
import { ProxyFleet, type NackReport } from './proxy-fleet.js';
import { ProxyStream, type ProxyView } from './proxy-stream.js';
import type { Rejection } from './rejections.js';
import type { SnapshotStore } from './store.js';
import { StreamCaps } from './stream-caps.js';
import { StreamGate, type StreamSecurity } from './stream-gate.js';
import type { EndReason } from './stream-lifetime.js';
import { DEFAULT_STREAM_LIMITS, MAX_QUEUED_MESSAGES, type StreamLimits } from './stream-limits.js';
import { StreamListener, type StreamCall } from './stream-listener.js';
import type { StreamMetrics } from './stream-metrics.js';
import { ThrottledLog } from './throttled-log.js';

export type { NackReport } from './proxy-fleet.js';
export type { ProxyView } from './proxy-stream.js';
export type { StreamSecurity } from './stream-gate.js';

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

/** The `limit` label of tollgate_controller_stream_limited_total. */
type Limit = 'streams' | 'pending_per_peer' | 'streams_per_gateway' | 'messages' | 'hello';

export class SnapshotStreamServer implements Runnable {
  readonly name = 'snapshot-server';
  readonly needsLeader = false;
  readonly #o: StreamServerOptions;
  readonly #helloTimeoutMs: number;
  readonly #warn: ThrottledLog;
  readonly #listener: StreamListener;
  readonly #caps: StreamCaps;
  readonly #gate: StreamGate;
  readonly #payloads: PayloadCache;
  readonly #fleet: ProxyFleet;

  constructor(o: StreamServerOptions) {
    this.#o = o;
    this.#helloTimeoutMs = o.helloTimeoutMs ?? 15_000;
    const limits = { ...DEFAULT_STREAM_LIMITS, ...o.limits };
    this.#warn = new ThrottledLog(o.log);
    this.#listener = new StreamListener({ addr: o.addr, limits, shutdownGraceMs: o.shutdownGraceMs ?? 5_000, log: o.log });
    this.#caps = new StreamCaps(limits, o.metrics.open);
    this.#gate = new StreamGate({ security: o.security ?? { kind: 'plaintext' }, limits, metrics: o.metrics, log: o.log, warn: this.#warn });
    this.#payloads = new PayloadCache(o.metrics.encodings);
    this.#fleet = new ProxyFleet({
      store: o.store,
      payloads: this.#payloads,
      metrics: o.metrics,
      log: o.log,
      answerTimeoutMs: o.answerTimeoutMs ?? 15_000,
      ...(o.onNack ? { onNack: o.onNack } : {}),
      ...(o.onRejectionChange ? { onRejectionChange: o.onRejectionChange } : {}),
      ...(o.onProxiesChange ? { onProxiesChange: o.onProxiesChange } : {}),
    });
    o.store.onChange((r) => {
      this.#fleet.storeChanged(r);
      o.metrics.desiredVersions(o.store.entries());
    });
  }

  /** The bound port (after start). */
  get port(): number {
    return this.#listener.port;
  }

  /** Resolves once no proxy has a push unanswered, or after `maxMs` (at once when none has). */
  answered(maxMs: number): Promise<void> {
    return this.#fleet.answered(maxMs);
  }

  /** Why the Gateway's snapshot is rejected, while it is: until every proxy connected for it ACKs a version other than the refused one. */
  rejection(gateway: string): Rejection | undefined {
    return this.#fleet.rejection(gateway);
  }

  /** Connected proxies, by Gateway (sorted). */
  proxies(): Map<string, ProxyView[]> {
    return this.#fleet.proxies();
  }

  /** Versions kept as delta bases, by Gateway (tests: they must not pile up). */
  baseVersions(gateway: string): string[] {
    return this.#payloads.baseVersions(gateway);
  }

  async start(): Promise<void> {
    const address = await this.#listener.start(this.#gate.credentials(), (call) => this.#open(call));
    this.#o.metrics.desiredVersions(this.#o.store.entries());
    this.#o.listening?.(address);
  }

  async stop(): Promise<void> {
    this.#fleet.removeAll();
    await this.#listener.stop();
  }

  #open(call: StreamCall): void {
    let stream: ProxyStream | null = null;
    let gone = false;
    // Messages are handled in order; a hello waits for its authentication, and what follows it
    // waits with it.
    let queue: Promise<void> = Promise.resolve();
    let queued = 0;
    // A connection that never says hello holds nothing for long.
    const helloTimer = setTimeout(() => {
      if (!stream && !gone) this.#fail(call, null, grpc.status.DEADLINE_EXCEEDED, `no hello within ${this.#helloTimeoutMs}ms`);
    }, this.#helloTimeoutMs);
    helloTimer.unref();
    const { slot, refused } = this.#caps.opened(call.getPeer());
    const end = () => {
      if (gone) return;
      gone = true;
      slot.close();
      clearTimeout(helloTimer);
      if (stream) this.#fleet.remove(stream);
    };
    call.on('end', end);
    call.on('cancelled', end);
    call.on('error', end);
    if (refused) return this.#refuse(call, refused.limit, grpc.status.RESOURCE_EXHAUSTED, refused.message);
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
            slot.admitted();
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
  async #message(call: StreamCall, stream: ProxyStream | null, m: ProxyMessage, gone: () => boolean): Promise<ProxyStream | undefined> {
    if (!('hello' in m)) {
      if (!stream) return this.#fail(call, null, grpc.status.INVALID_ARGUMENT, 'the first message of a stream is a hello naming the Gateway');
      if ('ack' in m) this.#fleet.ack(stream, m.ack.version, m.ack.nonce);
      else this.#fleet.nack(stream, m.nack.nonce, m.nack.error, m.nack.wantFull === true);
      return;
    }
    if (stream) return this.#fail(call, stream, grpc.status.INVALID_ARGUMENT, 'hello sent twice; a stream serves one Gateway');
    const h = m.hello;
    const problem = helloProblem(h);
    if (problem) return this.#refuse(call, 'hello', grpc.status.INVALID_ARGUMENT, problem);
    const admission = await this.#gate.admit(call.metadata, h, call.getPeer(), gone);
    if (!admission) return;
    if (!admission.ok) return this.#fail(call, null, admission.code, admission.message);
    const full = this.#caps.gatewayFull(h.gateway, this.#fleet.count(h.gateway));
    if (full) return this.#refuse(call, full.limit, grpc.status.RESOURCE_EXHAUSTED, full.message);
    const link = { peer: call.getPeer(), send: (p: Parameters<StreamCall['write']>[0]) => void call.write(p), end: () => call.end() };
    const s = new ProxyStream(link, h.gateway, h.pod || link.peer, h.podNamespace, h.version, h.deltas === true);
    s.lifetime = this.#gate.lifetime(s.gateway, s.pod, admission.token, (reason, code, message) => this.#end(s, call, reason, code, message));
    this.#fleet.add(s);
    // Headers now tell the proxy its hello was accepted, even when nothing is to be sent.
    call.sendMetadata(new grpc.Metadata());
    this.#fleet.push(s);
    return s;
  }

  /** The controller ends an admitted stream; the proxy keeps serving and reconnects. */
  #end(s: ProxyStream, call: StreamCall, reason: EndReason, code: grpc.status, message: string): void {
    if (!this.#fleet.has(s)) return;
    this.#o.metrics.ended.inc({ reason });
    const fields = { gateway: s.gateway, pod: s.pod, reason, status: grpc.status[code] };
    if (reason === 'reauth_refused') this.#o.log.warn({ ...fields, code: 'TG_CONTROLLER_STREAM_REFUSED' }, `snapshot stream of ${s.gateway} to ${s.pod} ended: ${grpc.status[code]}: ${message}`);
    else this.#o.log.info(fields, `snapshot stream of ${s.gateway} to ${s.pod} ended: ${message}`);
    // A planned end (age, the token's expiry): the proxy reconnects at once, without backoff.
    const trailers = new grpc.Metadata();
    if (reason !== 'reauth_refused') trailers.set(RECONNECT_TRAILER, reason);
    this.#fail(call, s, code, message, trailers);
  }

  /** A bound reached: counted, logged (throttled), and the stream ended with `code`. */
  #refuse(call: StreamCall, limit: Limit, code: grpc.status, message: string, stream: ProxyStream | null = null): undefined {
    this.#o.metrics.limited.inc({ limit });
    this.#warn.warn(`limit:${limit}`, { limit, peer: call.getPeer(), code: 'TG_CONTROLLER_STREAM_REFUSED', status: grpc.status[code] }, `snapshot stream refused to ${call.getPeer()}: ${grpc.status[code]}: ${message}`);
    return this.#fail(call, stream, code, message);
  }

  #fail(call: StreamCall, stream: ProxyStream | null, code: grpc.status, details: string, metadata?: grpc.Metadata): undefined {
    if (stream) this.#fleet.remove(stream, false);
    // grpc-js ends a server stream with the status (and trailers) of the error emitted on it.
    call.emit('error', Object.assign(new Error(details), { code, details, ...(metadata ? { metadata } : {}) }));
    return undefined;
  }
}
