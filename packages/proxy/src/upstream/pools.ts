// One undici Pool per backend address, shared by every config that names it, so a reload
// keeps warm connections. Pools no config uses any more are closed after their in-flight
// requests finish (Pool#close waits for them).
import { Pool } from 'undici';

export interface PoolOptions {
  readonly connectTimeoutMs: number;
}

export class PoolSet {
  readonly #pools = new Map<string, Pool>();
  constructor(readonly options: PoolOptions) {}

  get(name: string, host: string, port: number): Pool {
    let pool = this.#pools.get(name);
    if (!pool) {
      const h = host.includes(':') ? `[${host}]` : host;
      pool = new Pool(`http://${h}:${port}`, {
        connectTimeout: this.options.connectTimeoutMs,
        // Per-request timeouts are set on each dispatch; these are the ceilings.
        headersTimeout: 0,
        bodyTimeout: 0,
        keepAliveTimeout: 30_000,
      });
      this.#pools.set(name, pool);
    }
    return pool;
  }

  /** Closes the pools whose backend is not in `keep`. */
  async retain(keep: ReadonlySet<string>): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [name, pool] of this.#pools) {
      if (keep.has(name)) continue;
      this.#pools.delete(name);
      closing.push(pool.close());
    }
    await Promise.allSettled(closing);
  }

  get size(): number {
    return this.#pools.size;
  }

  async close(): Promise<void> {
    await this.retain(new Set());
  }
}
