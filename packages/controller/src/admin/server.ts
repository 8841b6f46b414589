// The controller's admin server (127.0.0.1:9095 by default): /logging (the JSON per-component
// contract of docs/admin-api.md that `gwctl controller log` speaks), /snapshots and
// /debug/pprof. Same rules as the proxy's admin: unknown query parameters are a 400 naming
// them, POSTs from another site are refused.
import { encode, heap, time } from '@datadog/pprof';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { COMPONENTS, LEVELS, isComponent, isLevel, type Logs } from '../log/components.js';
import type { HostPort } from '../options.js';
import type { SnapshotStore } from '../snapshots/store.js';
import type { Runnable } from '../runtime/runnable.js';
import { bindError, listenAddress } from '../runtime/listen.js';
import { snapshotsView } from './snapshots-view.js';

const TEXT = 'text/plain; charset=utf-8';

function refuseCrossSite(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (request.method === 'GET' || request.method === 'HEAD') return done();
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    void reply.code(403).type(TEXT).send(`cross-site request refused (Sec-Fetch-Site: ${site})\n`);
    return;
  }
  const origin = request.headers.origin;
  if (origin !== undefined) {
    let same = false;
    try {
      same = new URL(origin).host === request.headers.host;
    } catch {
      same = false;
    }
    if (!same) {
      void reply.code(403).type(TEXT).send(`cross-origin request refused (Origin: ${origin})\n`);
      return;
    }
  }
  done();
}

const keys = (q: unknown) => (q !== null && typeof q === 'object' ? Object.keys(q) : []);
const single = (v: unknown): string | undefined | null => (v === undefined ? undefined : typeof v === 'string' ? v : null);

function loggingRoutes(app: FastifyInstance, logs: Logs): void {
  const body = () => ({ levels: logs.levels() });
  const bad = (reply: FastifyReply, line: string) => reply.code(400).type(TEXT).send(`${line}\n`);
  app.get('/logging', async (request, reply) => {
    if (keys(request.query).length) return bad(reply, 'GET /logging takes no query parameters');
    return reply.send(body());
  });
  app.post('/logging', async (request, reply) => {
    const unknown = keys(request.query).filter((k) => k !== 'level' && k !== 'component');
    if (unknown.length) return bad(reply, `unknown query parameter ${unknown.join(', ')}`);
    const q = request.query as Record<string, unknown>;
    const level = single(q.level);
    const component = single(q.component);
    if (level === undefined || level === null) return bad(reply, `expected ?level=<level> (${LEVELS.join(', ')})`);
    if (!isLevel(level)) return bad(reply, `unknown level "${level}"; levels: ${LEVELS.join(', ')}`);
    if (component === null || (component !== undefined && !isComponent(component))) {
      return bad(reply, `unknown component "${String(component)}"; components: ${COMPONENTS.join(', ')}`);
    }
    if (component === undefined) logs.setAll(level);
    else logs.setOne(component, level);
    logs.get('default').info({ levels: logs.levels() }, 'log levels changed');
    return reply.send(body());
  });
}

// Heap sampling and the CPU profiler are process-wide.
let heapUsers = 0;
let cpuRunning = false;

function pprofRoutes(app: FastifyInstance): void {
  if (heapUsers++ === 0) heap.start(512 * 1024, 64);
  app.addHook('onClose', async () => {
    if (--heapUsers === 0) heap.stop();
  });
  app.get('/debug/pprof/profile', async (request, reply) => {
    const unknown = keys(request.query).filter((k) => k !== 'seconds');
    if (unknown.length) return reply.code(400).type(TEXT).send(`unknown query parameter ${unknown.join(', ')}; expected seconds\n`);
    const raw = single((request.query as Record<string, unknown>).seconds);
    const seconds = raw === undefined ? 10 : /^[0-9]+$/.test(raw ?? '') ? Number(raw) : NaN;
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) return reply.code(400).type(TEXT).send(`seconds must be an integer from 1 to 300 (got ${JSON.stringify(raw)}); default 10\n`);
    if (cpuRunning) return reply.code(409).type(TEXT).send('a CPU profile is already being taken; retry when it completes\n');
    cpuRunning = true;
    try {
      const profile = await time.profile({ durationMillis: seconds * 1000 });
      return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="profile"').send(await encode(profile));
    } finally {
      cpuRunning = false;
    }
  });
  app.get('/debug/pprof/heap', async (request, reply) => {
    if (keys(request.query).length) return reply.code(400).type(TEXT).send('GET /debug/pprof/heap takes no query parameters\n');
    return reply.type('application/octet-stream').header('content-disposition', 'attachment; filename="heap"').send(await encode(heap.profile()));
  });
}

export class AdminServer implements Runnable {
  readonly name = 'admin';
  readonly needsLeader = false;
  readonly #app: FastifyInstance;
  #address = '';

  constructor(
    private readonly addr: HostPort,
    logs: Logs,
    store: SnapshotStore,
    private readonly onListening: (address: string) => void,
  ) {
    this.#app = Fastify({ logger: false, forceCloseConnections: true });
    this.#app.addHook('onRequest', refuseCrossSite);
    loggingRoutes(this.#app, logs);
    this.#app.get('/snapshots', async (request, reply) => {
      if (keys(request.query).length) return reply.code(400).type(TEXT).send('GET /snapshots takes no query parameters\n');
      // JSON.stringify redacts every Secret in the IR (Secret.toJSON).
      return reply.type('application/json').send(JSON.stringify(snapshotsView(store), null, 2));
    });
    pprofRoutes(this.#app);
    this.#app.setNotFoundHandler((request, reply) =>
      reply.code(404).type(TEXT).send(`no admin endpoint ${request.method} ${request.url.split('?')[0]}; endpoints: /logging, /snapshots, /debug/pprof/profile, /debug/pprof/heap\n`),
    );
  }

  get address(): string {
    return this.#address;
  }

  async start(): Promise<void> {
    try {
      await this.#app.listen({ host: this.addr.host || '0.0.0.0', port: this.addr.port });
    } catch (err) {
      throw bindError('admin', '--admin-addr', this.addr, err);
    }
    this.#address = listenAddress(this.#app.server);
    this.onListening(this.#address);
  }

  async stop(): Promise<void> {
    await this.#app.close();
  }
}
