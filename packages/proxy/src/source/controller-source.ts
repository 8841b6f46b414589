// The controller's snapshot stream as a snapshot source (cluster mode). The proxy opens one
// stream for its Gateway, saying which version it serves; every snapshot the controller
// sends is validated (a SnapshotDecoder: the wire schema and version check; each route comes
// as its own text, and a text the proxy already serves is taken as it was decoded) and
// applied through the same sink as a file reload, then answered: ACK once it serves, NACK
// with the reason when it does not validate or the runtime refuses it (the last good keeps
// serving). When the stream ends the proxy keeps serving what it has and reconnects with
// exponential backoff and full jitter.
//
// The way back to a controller that went away: each attempt after a lost stream dials on a
// new channel (its own subchannels, its own name resolution), so no connection state of the
// channel before (a failure it keeps returning until its own backoff ends, an address it
// resolved) outlives the attempt that saw it; an attempt the controller has not answered
// within connectTimeoutMs is given up (a SYN to an address nobody holds any more waits for
// the kernel's retries, about two minutes); and a controller that vanished without closing
// the connection is noticed by a keepalive ping within 15 s.
//
// Security: with TLS (the default) the controller's certificate must chain to the CA file
// (the `tollgate-ca` ConfigMap mounted into the pod) and name the host dialled, and every
// stream carries the pod's projected ServiceAccount token as `authorization: Bearer` metadata.
// Both files are read again on every connect: kubelet rotates the token and updates the
// mounted ConfigMap in place, so a proxy follows a new token or CA without restarting. The
// controller ends a stream at its maximum age and when the token it was opened with expires
// (a `tollgate-reconnect` trailer says so): the proxy then reconnects at once with the token it
// holds now, serving throughout, and is sent nothing unless its version is no longer current.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { DeltaMismatchError, SnapshotDecoder } from '@tollgate/api';
import { RECONNECT_TRAILER, SNAPSHOT_SERVICE, SNAPSHOT_STREAM_PATH, type ProxyMessage, type SnapshotPush } from '@tollgate/api/snapshot-stream';
import type { Logger } from 'pino';
import type { SnapshotSink, SnapshotSource, SnapshotSourceState } from './snapshot-source.js';

export interface ControllerIdentity {
  /** `<namespace>/<name>` of the Gateway this proxy serves. */
  readonly gateway: string;
  readonly pod: string;
  readonly podNamespace: string;
}

/** How the proxy reaches the controller: TLS with a token (the default), or plaintext (development). */
export type ControllerSecurity =
  | { readonly kind: 'plaintext' }
  | {
      readonly kind: 'tls';
      /** PEM file of the CA the controller's serving certificate chains to. */
      readonly caFile: string;
      /** The projected ServiceAccount token (audience tollgate). */
      readonly tokenFile: string;
    };

export interface ControllerSourceOptions extends ControllerIdentity {
  /** host:port of the controller's snapshot stream. */
  readonly address: string;
  readonly security: ControllerSecurity;
  readonly log: Logger;
  /** First reconnect delay (default 250 ms); doubles per failed attempt up to maxBackoffMs. */
  readonly initialBackoffMs?: number;
  /** Default 10 s. */
  readonly maxBackoffMs?: number;
  /** How long an attempt waits for the controller's answer (its response headers) before it is given up (default 10 s). */
  readonly connectTimeoutMs?: number;
}

export type StreamState = 'connecting' | 'connected' | 'disconnected' | 'stopped';

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // A controller gone without closing its connection (a node lost, a pod's network torn down
  // before its process) answers no ping: the stream ends 10 + 5 s later. The controller's
  // server does not limit how often a client pings.
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  // A channel made for a new attempt must not share the subchannel, and with it the stalled
  // or failed connection, of the channel it replaces (grpc-js pools them process-wide).
  'grpc.use_local_subchannel_pool': 1,
  // Snapshots of large Gateways exceed gRPC's 4 MiB default.
  'grpc.max_receive_message_length': 256 * 1024 * 1024,
  // HTTP/2's default 64 KiB receive window makes a snapshot of a few MiB (1.6 MiB at 3,000
  // routes) cross in dozens of round trips, each waiting for both processes' event loops: a
  // window larger than a large snapshot lets it arrive in one go. It bounds what the
  // controller may send ahead of the proxy's reading, and the proxy reads every message whole.
  'grpc-node.flow_control_window': 16 * 1024 * 1024,
};

export class ControllerSnapshotSource implements SnapshotSource {
  readonly name = 'controller stream';
  readonly #o: ControllerSourceOptions;
  #client: grpc.Client | null = null;
  /** The CA text the current client trusts; a changed file makes a new client. */
  #clientCa: string | null = null;
  #sink: SnapshotSink | null = null;
  #call: grpc.ClientDuplexStream<ProxyMessage, SnapshotPush> | null = null;
  #state: StreamState = 'disconnected';
  #queue: Promise<void> = Promise.resolve();
  readonly #decoder = new SnapshotDecoder();
  #timer: NodeJS.Timeout | null = null;
  #attempt = 0;
  #applied = 0;
  #refused = 0;
  #version: string | null = null;
  #lastError: string | null = null;
  #lastNack: { version: string; error: string; at: string } | null = null;
  #connects = 0;
  #lastDisconnect: { at: string; reason: string } | null = null;

  readonly #channelOptions: grpc.ChannelOptions;

  constructor(o: ControllerSourceOptions) {
    this.#o = o;
    // The channel's own reconnect backoff (1 s growing to 120 s by default) would otherwise
    // fail every attempt at once with its last error until it expires: it follows ours.
    this.#channelOptions = { ...CHANNEL_OPTIONS, 'grpc.initial_reconnect_backoff_ms': o.initialBackoffMs ?? 250, 'grpc.max_reconnect_backoff_ms': o.maxBackoffMs ?? 10_000 };
  }

  get streamState(): StreamState {
    return this.#state;
  }

  /** Opens the stream; resolves at once: the proxy is not ready until a snapshot is applied. */
  async start(sink: SnapshotSink): Promise<void> {
    this.#sink = sink;
    this.#connect();
  }

  stop(): void {
    this.#state = 'stopped';
    this.#sink = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#call?.cancel();
    this.#call = null;
    this.#dropClient();
  }

  state(): SnapshotSourceState {
    return {
      kind: 'controller',
      controller: this.#o.address,
      security: this.#o.security.kind,
      gateway: this.#o.gateway,
      pod: this.#o.pod,
      stream: this.#state,
      applied: this.#applied,
      refused: this.#refused,
      lastError: this.#lastError,
      version: this.#version,
      lastNack: this.#lastNack,
      connects: this.#connects,
      lastDisconnect: this.#lastDisconnect,
    };
  }

  /** The next attempt dials on a new channel. */
  #dropClient(): void {
    this.#client?.close();
    this.#client = null;
    this.#clientCa = null;
  }

  /** The client for this attempt and the call's metadata; a string says why there is none. */
  #prepare(): { client: grpc.Client; metadata: grpc.Metadata } | string {
    const sec = this.#o.security;
    const metadata = new grpc.Metadata();
    if (sec.kind === 'plaintext') {
      this.#client ??= new grpc.Client(this.#o.address, grpc.credentials.createInsecure(), this.#channelOptions);
      return { client: this.#client, metadata };
    }
    let ca: string;
    let token: string;
    try {
      ca = readFileSync(sec.caFile, 'utf8');
    } catch (err) {
      return `cannot read the controller's CA ${sec.caFile} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); it is the ca.crt of the tollgate-ca ConfigMap`;
    }
    try {
      token = readFileSync(sec.tokenFile, 'utf8').trim();
    } catch (err) {
      return `cannot read the ServiceAccount token ${sec.tokenFile} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); the pod needs its projected token volume (audience tollgate)`;
    }
    if (!token) return `the ServiceAccount token ${sec.tokenFile} is empty`;
    if (!this.#client || this.#clientCa !== ca) {
      let credentials: grpc.ChannelCredentials;
      try {
        credentials = grpc.credentials.createSsl(Buffer.from(ca));
      } catch (err) {
        return `the controller's CA ${sec.caFile} is not usable: ${(err as Error).message}`;
      }
      this.#client?.close();
      this.#client = new grpc.Client(this.#o.address, credentials, this.#channelOptions);
      this.#clientCa = ca;
    }
    metadata.set('authorization', `Bearer ${token}`);
    return { client: this.#client, metadata };
  }

  /** A failed stream's reason, said so that the fix is plain. */
  #reason(err: grpc.ServiceError): string {
    // grpc-js wraps a failed connection's cause: "No connection established. Last error: Error: <cause>. Resolution note: ".
    // Node adds a hint about the system's CA store, which is not where the controller's CA lives.
    const details = (err.details || err.message)
      .replace(/^No connection established\. Last error: (Error: )?/, '')
      .replace(/\.? ?Resolution note: ?$/, '')
      .replace(/; if the root CA is installed locally, try running Node\.js with --use-system-ca/, '');
    const sec = this.#o.security;
    if (sec.kind === 'tls' && err.code === grpc.status.UNAVAILABLE && /certificate|self[- ]signed|issuer|altnames|SSL|TLS|handshake/i.test(details)) {
      return `TLS: the controller at ${this.#o.address} is not trusted with the CA in ${sec.caFile} (${details}); the CA file must be the ca.crt of the tollgate-ca ConfigMap of this namespace, and the address a name in the controller's certificate`;
    }
    return `${grpc.status[err.code] ?? err.code}: ${details}`;
  }

  #connect(): void {
    if (this.#state === 'stopped') return;
    this.#state = 'connecting';
    const prepared = this.#prepare();
    if (typeof prepared === 'string') {
      this.#state = 'disconnected';
      this.#lastDisconnect = { at: new Date().toISOString(), reason: prepared };
      this.#schedule(prepared);
      return;
    }
    const call = prepared.client.makeBidiStreamRequest<ProxyMessage, SnapshotPush>(
      SNAPSHOT_STREAM_PATH,
      SNAPSHOT_SERVICE.Stream.requestSerialize,
      SNAPSHOT_SERVICE.Stream.responseDeserialize,
      prepared.metadata,
    );
    this.#call = call;
    let ended = false;
    const connectTimeoutMs = this.#o.connectTimeoutMs ?? 10_000;
    const unanswered = setTimeout(() => {
      if (ended) return;
      end(`UNAVAILABLE: no answer from the controller at ${this.#o.address} within ${connectTimeoutMs} ms (the connection, its TLS handshake or the controller's check of the token did not complete); check that the controller's pod is Ready, that its Service has a ready endpoint and that nothing between drops the traffic (a NetworkPolicy)`);
      call.cancel();
    }, connectTimeoutMs).unref();
    const end = (reason: string, planned = false) => {
      if (ended) return;
      ended = true;
      clearTimeout(unanswered);
      if (this.#call === call) this.#call = null;
      if (this.#state === 'stopped') return;
      // A stream ended by the controller on purpose leaves a working connection to dial on again.
      if (!planned) this.#dropClient();
      this.#state = 'disconnected';
      this.#lastDisconnect = { at: new Date().toISOString(), reason };
      this.#schedule(reason, planned);
    };
    // The controller sends its headers once it has accepted the hello.
    call.on('metadata', () => {
      clearTimeout(unanswered);
      if (this.#state === 'stopped') return;
      this.#state = 'connected';
      this.#connects++;
      this.#attempt = 0;
    });
    call.on('data', (push: SnapshotPush) => {
      const arrived = performance.now();
      this.#queue = this.#queue.then(() => this.#apply(call, push, arrived));
    });
    call.on('error', (err: grpc.ServiceError) => end(this.#reason(err), (err.metadata?.get(RECONNECT_TRAILER).length ?? 0) > 0));
    call.on('end', () => end('the controller ended the stream'));
    call.write({ hello: { gateway: this.#o.gateway, pod: this.#o.pod, podNamespace: this.#o.podNamespace, version: this.#version ?? '', deltas: true } });
  }

  #schedule(reason: string, planned = false): void {
    if (planned) {
      this.#o.log.info({ reason, version: this.#version }, `the controller ended the snapshot stream (${reason}); serving ${this.#version ?? 'nothing'} and reconnecting now`);
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#connect();
      }, 0);
      return;
    }
    const initial = this.#o.initialBackoffMs ?? 250;
    const max = this.#o.maxBackoffMs ?? 10_000;
    const cap = Math.min(max, initial * 2 ** Math.min(this.#attempt, 20));
    // Full jitter: proxies that lost the same controller do not come back in step.
    const delay = Math.round(cap / 2 + Math.random() * (cap / 2));
    this.#attempt++;
    // What a person must fix (trust, identity, a missing file) is an error; a controller away is not.
    const level = /^(TLS:|UNAUTHENTICATED|PERMISSION_DENIED|cannot read|the ServiceAccount token|the controller's CA)/.test(reason) ? 'error' : 'warn';
    this.#o.log[level]({ reason, retryInMs: delay, version: this.#version }, `snapshot stream to ${this.#o.address} lost (${reason}); serving ${this.#version ?? 'nothing'} and reconnecting in ${delay}ms`);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#connect();
    }, delay);
  }

  /** `arrived`: when the push came off the stream (performance.now()); the log line tells where the time went since. */
  async #apply(call: grpc.ClientDuplexStream<ProxyMessage, SnapshotPush>, push: SnapshotPush, arrived: number): Promise<void> {
    const started = performance.now();
    let decoded = started;
    const sink = this.#sink;
    if (!sink) return;
    // Sent again after an answer that did not arrive in time: it serves already.
    if (push.version === this.#version) {
      if (this.#call === call) call.write({ ack: { version: push.version, nonce: push.nonce } });
      return;
    }
    try {
      const parts = {
        skeleton: push.snapshot.toString('utf8'),
        routes: push.routes.map((r) => r.toString('utf8')),
        routeCounts: push.routeCounts,
        endpoints: push.endpoints.map((e) => e.toString('utf8')),
        ...(push.baseVersion ? { base: { version: push.baseVersion, refs: push.routeRefs, endpointRefs: push.endpointRefs } } : {}),
      };
      const snapshot = this.#decoder.decodeParts(parts, `snapshot ${push.version}`);
      decoded = performance.now();
      try {
        if (snapshot.version !== push.version) throw new Error(`snapshot ${push.version}: its content is version ${snapshot.version}`);
        await sink.apply(snapshot);
      } catch (err) {
        // The decoder must hold what serves: the next delta is relative to it.
        this.#decoder.rollback();
        throw err;
      }
    } catch (err) {
      const error = (err as Error).message;
      if (err instanceof DeltaMismatchError) {
        // Not a refusal: the controller sends the same version in full.
        this.#o.log.info({ version: push.version }, `snapshot ${push.version} came as a delta this proxy cannot resolve (${error.replace(/\s+/g, ' ')}); asking for it in full`);
        if (this.#call === call) call.write({ nack: { nonce: push.nonce, error, wantFull: true } });
        return;
      }
      this.#refused++;
      this.#lastError = error;
      this.#lastNack = { version: push.version, error, at: new Date().toISOString() };
      this.#o.log.error({ version: push.version }, `snapshot ${push.version} refused, ${this.#version ? `${this.#version} keeps serving` : 'nothing serves yet'}: ${error}`);
      if (this.#call === call) call.write({ nack: { nonce: push.nonce, error } });
      return;
    }
    this.#applied++;
    this.#version = push.version;
    this.#lastError = null;
    // Where the time went: waiting behind the apply before it, decoding, applying on every thread.
    const ms = (from: number, to: number) => Math.round((to - from) * 10) / 10;
    const timing = { waitedMs: ms(arrived, started), decodeMs: ms(started, decoded), applyMs: ms(decoded, performance.now()) };
    this.#o.log.info({ version: push.version, ...timing }, `serving snapshot ${push.version} from the controller`);
    if (this.#call === call) call.write({ ack: { version: push.version, nonce: push.nonce } });
  }
}
