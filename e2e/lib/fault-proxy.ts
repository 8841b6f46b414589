// A fault-injecting proxy in front of the real kube-apiserver, for tests of what a client does
// when the API server misbehaves: it terminates TLS with the API server's own serving
// certificate (so a kubeconfig needs only its server URL changed), reads each request as the
// API server would (verb, resource, subresource, namespace, name: its RequestInfo), and either
// passes it through, streaming both ways (watches included), or answers it with a fault:
//
//   - a status (429, 500, 503, ...) with a Kubernetes Status body, as the API server sends
//     (429 `storage is (re)initializing` right after a CRD is installed);
//   - a reset: a TCP RST before any answer; or a cut once the upstream's response headers are
//     through (a watch or list whose body ends early, as when a connection drops);
//   - a hold: the request waits until the test says (a second client writes the same object
//     meanwhile, so the held write meets a real 409 Conflict from the API server), then passes.
//
// Rules are matched in the order they were added; each injects its fault at most `times` times
// (after letting `skip` matches through), and counts what it matched and injected, so a test
// asserts that the faults it planned actually happened. Every request is recorded with its
// outcome and the status code its client got, and a test can await a request (`recorded`)
// instead of guessing when it comes. Only HTTP/1.1 is offered (ALPN), which every Kubernetes client falls back to.
// Requests go on with the headers the client sent, so a client authenticates with a bearer
// token (a ServiceAccount kubeconfig); a client certificate ends at the proxy's TLS.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';

/** The API server's verbs (k8s.io/apiserver RequestInfo). */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection' | 'other';

export interface RequestInfo {
  readonly method: string;
  /** Path without the query. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly verb: Verb;
  /** '' for the core group; undefined for a path outside /api and /apis (/readyz, /version, ...). */
  readonly apiGroup?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** The RequestInfo of a request, as the API server derives it from the method and path. */
export function requestInfo(method: string, url: string): RequestInfo {
  const u = new URL(url, 'https://x');
  const query = u.searchParams;
  const base = { method, path: u.pathname, query };
  const parts = u.pathname.split('/').filter(Boolean);
  let rest: string[];
  let apiGroup: string;
  if (parts[0] === 'api' && parts.length >= 2) {
    apiGroup = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    apiGroup = parts[1]!;
    rest = parts.slice(3);
  } else {
    return { ...base, verb: 'other' };
  }
  let namespace: string | undefined;
  // /namespaces/<ns>/<resource>/... is namespaced; /namespaces and /namespaces/<ns>[/status] are the Namespace kind.
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  const watching = query.get('watch') === 'true' || query.get('watch') === '1';
  let verb: Verb;
  switch (method) {
    case 'GET':
    case 'HEAD':
      verb = watching ? 'watch' : name ? 'get' : 'list';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name ? 'delete' : 'deletecollection';
      break;
    default:
      verb = 'other';
  }
  return { ...base, verb, apiGroup, resource, subresource, namespace, name };
}

/** What a rule matches; every field given must match. */
export interface Match {
  readonly verb?: Verb | readonly Verb[];
  readonly resource?: string | RegExp;
  /** `''` matches only requests without a subresource. */
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly method?: string;
  readonly path?: RegExp;
}

export type Fault =
  | {
      readonly kind: 'status';
      readonly code: number;
      readonly message?: string;
      /** Sent as Retry-After (the API server sends 1 with its 429s). */
      readonly retryAfterSeconds?: number;
    }
  | {
      readonly kind: 'reset';
      /**
       * `request` (default): a TCP RST before any answer. `headers`: the upstream's response
       * headers are passed on, then the connection is closed mid-body (a FIN after them, since
       * an RST could discard them unread).
       */
      readonly when?: 'request' | 'headers';
    }
  | {
      readonly kind: 'hold';
      /** The request is passed on once this resolves (502 if it rejects). */
      readonly release: (info: RequestInfo) => Promise<unknown>;
    };

export interface RuleSpec {
  readonly match: Match;
  readonly fault: Fault;
  /** Faults injected at most (default: every match). */
  readonly times?: number;
  /** Matches let through before the first fault (default 0). */
  readonly skip?: number;
}

export class FaultRule {
  /** Requests that matched, faulted or not. */
  matched = 0;
  /** Faults injected. */
  injected = 0;
  constructor(readonly spec: RuleSpec) {}

  /** Whether this request gets the fault (and counts it). */
  take(info: RequestInfo): boolean {
    if (!matches(this.spec.match, info)) return false;
    this.matched++;
    if (this.matched <= (this.spec.skip ?? 0)) return false;
    if (this.injected >= (this.spec.times ?? Infinity)) return false;
    this.injected++;
    return true;
  }

  /** Every planned fault was injected. */
  get done(): boolean {
    return this.injected >= (this.spec.times ?? Infinity);
  }
}

export function matches(m: Match, info: RequestInfo): boolean {
  const one = <T>(want: T | undefined, have: T | undefined) => want === undefined || want === have;
  if (m.verb !== undefined && !(typeof m.verb === 'string' ? [m.verb] : m.verb).includes(info.verb)) return false;
  if (m.resource !== undefined && (info.resource === undefined || (typeof m.resource === 'string' ? m.resource !== info.resource : !m.resource.test(info.resource)))) return false;
  if (m.subresource !== undefined && (info.subresource ?? '') !== m.subresource) return false;
  if (m.path !== undefined && !m.path.test(info.path)) return false;
  return one(m.namespace, info.namespace) && one(m.name, info.name) && one(m.method, info.method);
}

export type Outcome = 'passed' | `status ${number}` | 'reset' | 'cut after headers' | 'upstream error';

export interface Recorded extends RequestInfo {
  readonly outcome: Outcome;
  /** The status code the client got (injected or the API server's); undefined without an answer. */
  readonly code?: number;
}

export interface FaultProxyOptions {
  /** The API server's URL, e.g. https://127.0.0.1:6443. */
  readonly upstream: string;
  /** CA that signed the upstream's serving certificate (to verify it). */
  readonly caFile: string;
  /** Certificate and key the proxy serves with; the API server's own keep clients' CA valid. */
  readonly certFile: string;
  readonly keyFile: string;
}

// Hop-by-hop headers (RFC 9110 7.6.1) are the connection's own, never forwarded.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k.toLowerCase())));
}

const REASONS: Record<number, string> = { 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout', 409: 'Conflict', 403: 'Forbidden' };

export class FaultProxy {
  readonly records: Recorded[] = [];
  readonly #rules: FaultRule[] = [];
  readonly #raw = new WeakMap<Socket, Socket>();
  readonly #waiters = new Set<() => void>();
  readonly #sockets = new Set<Socket>();
  readonly #agent: Agent;
  readonly #upstream: URL;
  readonly #ca: Buffer;
  #port = 0;

  private constructor(
    private readonly o: FaultProxyOptions,
    private readonly server: ReturnType<typeof createNetServer>,
  ) {
    this.#upstream = new URL(o.upstream);
    this.#ca = readFileSync(o.caFile);
    this.#agent = new Agent({ keepAlive: true, ca: this.#ca });
  }

  static async start(o: FaultProxyOptions): Promise<FaultProxy> {
    const secureContext = createSecureContext({ cert: readFileSync(o.certFile), key: readFileSync(o.keyFile) });
    const http = createHttpServer({ requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 30_000 });
    const net = createNetServer();
    const proxy = new FaultProxy(o, net);
    http.on('request', (req, res) => proxy.#handle(req, res));
    net.on('connection', (raw) => {
      proxy.#sockets.add(raw);
      raw.once('close', () => proxy.#sockets.delete(raw));
      // TLS over a socket of our own, so a reset can reach the TCP handle underneath.
      const tls = new TLSSocket(raw, { isServer: true, secureContext, ALPNProtocols: ['http/1.1'] });
      proxy.#raw.set(tls, raw);
      tls.on('error', () => raw.destroy());
      tls.once('secure', () => http.emit('connection', tls));
    });
    await new Promise<void>((resolve, reject) => {
      net.once('error', reject);
      net.listen(0, '127.0.0.1', () => resolve());
    });
    proxy.#port = (net.address() as AddressInfo).port;
    return proxy;
  }

  get url(): string {
    return `https://127.0.0.1:${this.#port}`;
  }

  /** Adds a rule after the existing ones. */
  rule(spec: RuleSpec): FaultRule {
    const r = new FaultRule(spec);
    this.#rules.push(r);
    return r;
  }

  /** Removes every rule: everything passes from now on (the records stay). */
  clearRules(): void {
    this.#rules.length = 0;
  }

  /** Requests recorded that match (with the given outcome, when one is given). */
  count(m: Match, outcome?: Outcome): number {
    return this.records.filter((r) => matches(m, r) && (outcome === undefined || r.outcome === outcome)).length;
  }

  /** The status codes the client got for the requests that match, in order (none: no answer). */
  codes(m: Match): (number | undefined)[] {
    return this.records.filter((r) => matches(m, r)).map((r) => r.code);
  }

  /** Resolves once `n` requests that match (and `where`, when given) are recorded, those already recorded included. */
  recorded(m: Match, n = 1, where: (r: Recorded) => boolean = () => true): Promise<void> {
    const enough = () => this.records.filter((r) => matches(m, r) && where(r)).length >= n;
    if (enough()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!enough()) return;
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }

  /** A copy of `kubeconfig` (JSON, as e2e writes them) whose clusters point at this proxy. */
  kubeconfig(from: string, to: string): string {
    const kc = JSON.parse(readFileSync(from, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    for (const c of kc.clusters) c.cluster.server = this.url;
    writeFileSync(to, JSON.stringify(kc, null, 2), { mode: 0o600 });
    return to;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    this.#agent.destroy();
    await closed;
  }

  #record(info: RequestInfo, outcome: Outcome, code?: number): void {
    this.records.push({ ...info, outcome, ...(code === undefined ? {} : { code }) });
    for (const check of [...this.#waiters]) check();
  }

  #reset(req: IncomingMessage): void {
    const raw = this.#raw.get(req.socket);
    if (raw) raw.resetAndDestroy();
    else req.socket.destroy();
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const info = requestInfo(req.method ?? 'GET', req.url ?? '/');
    const rule = this.#rules.find((r) => r.take(info));
    const fault = rule?.spec.fault;
    if (fault?.kind === 'status') {
      this.#record(info, `status ${fault.code}`, fault.code);
      const message = fault.message ?? (fault.code === 429 ? 'storage is (re)initializing' : `injected ${fault.code}`);
      const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason: REASONS[fault.code] ?? 'InternalError', code: fault.code });
      req.resume();
      res.writeHead(fault.code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {}) });
      res.end(body);
      return;
    }
    if (fault?.kind === 'reset' && (fault.when ?? 'request') === 'request') {
      this.#record(info, 'reset');
      this.#reset(req);
      return;
    }
    if (fault?.kind === 'hold') {
      fault.release(info).then(
        () => this.#pass(req, res, info),
        () => {
          this.#record(info, 'upstream error');
          req.resume();
          res.writeHead(502).end();
        },
      );
      return;
    }
    this.#pass(req, res, info, fault?.kind === 'reset');
  }

  /** Passes the request to the API server; `cut`: the answer ends after its headers. */
  #pass(req: IncomingMessage, res: ServerResponse, info: RequestInfo, cut = false): void {
    const up = httpsRequest({
      host: this.#upstream.hostname,
      port: this.#upstream.port,
      method: req.method,
      path: req.url,
      headers: forwardable(req.headers),
      agent: this.#agent,
      servername: this.#upstream.hostname === '127.0.0.1' ? undefined : this.#upstream.hostname,
    });
    up.on('response', (ur) => {
      res.writeHead(ur.statusCode ?? 502, forwardable(ur.headers));
      res.flushHeaders();
      if (cut) {
        this.#record(info, 'cut after headers', ur.statusCode);
        ur.destroy();
        req.socket.destroySoon();
        return;
      }
      this.#record(info, 'passed', ur.statusCode);
      ur.pipe(res);
      ur.on('error', () => res.destroy());
    });
    up.on('error', () => {
      this.#record(info, 'upstream error');
      res.destroy();
    });
    // The client gone (a watch stopped): the upstream request goes with it.
    res.on('close', () => up.destroy());
    req.pipe(up);
  }
}

/** A fault proxy in front of a test cluster's API server, serving with its certificate. */
export function faultProxyFor(cluster: { server: string; certs: { caCert: string; servingCert: string; servingKey: string } }): Promise<FaultProxy> {
  return FaultProxy.start({ upstream: cluster.server, caFile: cluster.certs.caCert, certFile: cluster.certs.servingCert, keyFile: cluster.certs.servingKey });
}
