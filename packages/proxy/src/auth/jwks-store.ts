// Remote key sets (jwt providers with `jwks.remote`), one per JWKS server, path and TLS
// settings, kept for the life of the process so a reload does not fetch them again. A set is
// fetched when first compiled, used for cacheDuration, then refreshed in the background while
// the old one keeps serving; a token whose `kid` no set holds fetches it again at once, but at
// most once every MIN_REFRESH_INTERVAL_MS per set (concurrent misses share one fetch), so
// tokens with made-up kids cannot turn the proxy against the issuer. A failed fetch keeps the
// last good set; with none yet, tokens wait for a fetch in flight (at most its timeout) and are
// otherwise refused at once until the next attempt is due.
import type { Pool } from 'undici';
import { undiciModule } from '../feature-module.js';
import { MAX_JWKS_BYTES, parseHostPort, type JwtKeysIR } from '@tollgate/api';
import type { Logger } from 'pino';
import type { Clock } from '../ratelimit/clock.js';
import { type KeySet, keySetOf } from './jwt-keys.js';

export type RemoteJwksIR = Extract<JwtKeysIR, { kind: 'remote' }>;

/** Least time between two fetches of one set (but the first and the cacheDuration refreshes). */
export const MIN_REFRESH_INTERVAL_MS = 10_000;
/** Remote sets held at once; the least recently compiled goes first. */
export const MAX_REMOTE_JWKS = 256;

/** Results counted in tollgate_jwks_fetches_total. */
export type JwksFetchResult = 'ok' | 'timeout' | 'unreachable' | 'status' | 'too_large' | 'invalid';

export interface JwksStoreOptions {
  readonly log: Logger;
  readonly clock: Clock;
  readonly count?: (result: JwksFetchResult) => void;
}

class FetchFailure extends Error {
  constructor(
    readonly result: Exclude<JwksFetchResult, 'ok'>,
    message: string,
  ) {
    super(message);
  }
}

export class JwksStore {
  readonly #sets = new Map<string, RemoteJwks>();
  constructor(readonly options: JwksStoreOptions) {}

  /** The set of `ir` (shared with every provider naming the same server, path and TLS), with `ir`'s cache and timeout. */
  get(ir: RemoteJwksIR): RemoteJwks {
    const key = JSON.stringify([ir.address, ir.path, ir.tls?.ca ?? null, ir.tls?.hostname ?? null, ir.tls !== null]);
    let set = this.#sets.get(key);
    if (set) this.#sets.delete(key);
    else set = new RemoteJwks(ir, this.options);
    this.#sets.set(key, set);
    set.settings = { cacheMs: ir.cacheMs, timeoutMs: ir.timeoutMs };
    if (this.#sets.size > MAX_REMOTE_JWKS) {
      // A provider still compiled keeps its set; it is only no longer shared.
      const oldest = this.#sets.keys().next().value!;
      this.#sets.delete(oldest);
    }
    return set;
  }

  async close(): Promise<void> {
    const sets = [...this.#sets.values()];
    this.#sets.clear();
    await Promise.allSettled(sets.map((s) => s.close()));
  }
}

export class RemoteJwks {
  /** `https://host:port/path` (or http), for logs and messages. */
  readonly url: string;
  settings: { cacheMs: number; timeoutMs: number };
  #set: KeySet | null = null;
  #fetchedAt = 0;
  #attemptAt = -Infinity;
  #inflight: Promise<void> | null = null;
  #failing = false;
  #pool: Pool | null = null;

  constructor(
    readonly ir: RemoteJwksIR,
    readonly options: JwksStoreOptions,
  ) {
    this.url = `${ir.tls ? 'https' : 'http'}://${ir.address}${ir.path}`;
    this.settings = { cacheMs: ir.cacheMs, timeoutMs: ir.timeoutMs };
    // Made by the compile of a config naming the keys: undici is loaded now, so a config it
    // cannot be loaded for is refused at load, not at its first fetch.
    undiciModule();
  }

  /** Starts the first fetch, so that the first token does not wait for it. */
  prefetch(): void {
    if (!this.#set) void this.#refresh();
  }

  /**
   * The set to verify with now: the cached one (refreshed in the background once older than
   * cacheDuration), or the first one once fetched; null when none could be fetched.
   */
  async keys(): Promise<KeySet | null> {
    if (this.#set) {
      if (this.options.clock() - this.#fetchedAt >= this.settings.cacheMs) void this.#refresh();
      return this.#set;
    }
    await this.#refresh();
    return this.#set;
  }

  /** A token named a kid the set does not hold: fetch again if allowed; true when a new set arrived. */
  async refreshForUnknownKid(): Promise<boolean> {
    const before = this.#set;
    await this.#refresh();
    return this.#set !== before;
  }

  /** One fetch at a time, and none within MIN_REFRESH_INTERVAL_MS of the previous attempt. */
  #refresh(): Promise<void> {
    if (this.#inflight) return this.#inflight;
    const now = this.options.clock();
    if (now - this.#attemptAt < MIN_REFRESH_INTERVAL_MS) return Promise.resolve();
    this.#attemptAt = now;
    this.#inflight = this.#fetch()
      .then(
        (set) => {
          this.#set = set;
          this.#fetchedAt = this.options.clock();
          this.options.count?.('ok');
          if (this.#failing) this.options.log.info({ jwks: this.url, keys: set.keys.length }, `JWKS ${this.url} fetched again after failures`);
          this.#failing = false;
        },
        (err: unknown) => {
          const failure = err instanceof FetchFailure ? err : new FetchFailure('unreachable', (err as Error).message);
          this.options.count?.(failure.result);
          this.#failing = true;
          const kept = this.#set ? `keeping the key set fetched ${Math.round((this.options.clock() - this.#fetchedAt) / 1000)}s ago` : 'no key set yet: tokens of the providers using it are refused (503 TG_JWKS_UNAVAILABLE)';
          this.options.log.warn({ jwks: this.url, result: failure.result, err: failure.message }, `JWKS ${this.url} could not be fetched (${failure.message}); ${kept}; next attempt in ${MIN_REFRESH_INTERVAL_MS / 1000}s at the earliest`);
        },
      )
      .finally(() => {
        this.#inflight = null;
      });
    return this.#inflight;
  }

  #getPool(): Pool {
    if (this.#pool) return this.#pool;
    const { ir } = this;
    const tls = ir.tls;
    const host = parseHostPort(ir.address);
    const name = host.ok ? host.value.host : '';
    const servername = tls?.hostname ?? (host.ok && host.value.kind === 'dns' ? name : undefined);
    this.#pool = new (undiciModule().Pool)(`${tls ? 'https' : 'http'}://${ir.address}`, {
      connections: 1,
      keepAliveTimeout: 4_000,
      maxResponseSize: MAX_JWKS_BYTES,
      connect: tls ? { ca: tls.ca ?? undefined, servername, rejectUnauthorized: true } : {},
    });
    return this.#pool;
  }

  async #fetch(): Promise<KeySet> {
    const { timeoutMs } = this.settings;
    const signal = AbortSignal.timeout(timeoutMs);
    let text: string;
    try {
      const res = await this.#getPool().request({
        method: 'GET',
        path: this.ir.path,
        headers: { accept: 'application/jwk-set+json, application/json', ...(this.ir.tls?.hostname ? { host: this.ir.tls.hostname } : {}) },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      if (res.statusCode !== 200) {
        discard(res.body);
        throw new FetchFailure('status', `the server answered ${res.statusCode}`);
      }
      const declared = Number(res.headers['content-length']);
      if (declared > MAX_JWKS_BYTES) {
        discard(res.body);
        throw new FetchFailure('too_large', `the answer is ${declared} bytes, more than the ${MAX_JWKS_BYTES} a key set may have`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_JWKS_BYTES) {
          discard(res.body);
          throw new FetchFailure('too_large', `the answer is more than the ${MAX_JWKS_BYTES} bytes a key set may have`);
        }
        chunks.push(chunk);
      }
      text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
    } catch (err) {
      throw classify(err, signal, timeoutMs);
    }
    try {
      return keySetOf(text, 'lenient');
    } catch (err) {
      throw new FetchFailure('invalid', (err as Error).message);
    }
  }

  /** At shutdown: a fetch in flight is dropped, not waited for. */
  async close(): Promise<void> {
    await this.#pool?.destroy();
  }
}

/** Stops reading an answer: its connection is closed, and the abort it reports is expected. */
function discard(body: { on(event: 'error', f: () => void): unknown; destroy(): unknown }): void {
  body.on('error', () => undefined);
  body.destroy();
}

function classify(err: unknown, signal: AbortSignal, timeoutMs: number): FetchFailure {
  if (err instanceof FetchFailure) return err;
  const e = err as NodeJS.ErrnoException;
  if (signal.aborted || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new FetchFailure('timeout', `no complete answer within ${timeoutMs} ms`);
  }
  if (e.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return new FetchFailure('too_large', `the answer is more than the ${MAX_JWKS_BYTES} bytes a key set may have`);
  if (e instanceof TypeError && /decode|encoded/i.test(e.message)) return new FetchFailure('invalid', 'the answer is not UTF-8 text');
  return new FetchFailure('unreachable', e.code ? `${e.code}: ${e.message}` : e.message);
}
