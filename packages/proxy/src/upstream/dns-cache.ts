// Host names of Backend resources, resolved by the proxy: each answer is kept for its TTL
// (bounded both ways) and resolved again after; a failed re-resolution keeps the last good
// addresses for a bounded time, so a DNS outage shorter than that does not fail requests to a
// provider that is up. Its `lookup` is the one a connection pool passes to net/tls.connect.
import { lookup as systemLookup, Resolver, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Clock } from '../ratelimit/clock.js';

export interface DnsSettings {
  /** An answer is kept at least this long, whatever its TTL (a TTL of 0 would resolve for every connection). */
  readonly minTtlMs: number;
  /** ... and at most this long. */
  readonly maxTtlMs: number;
  /** How long the last good addresses are used while resolution fails. */
  readonly staleMs: number;
  /** How soon a failed resolution is tried again. */
  readonly retryMs: number;
  /** Names the proxy keeps at once (the least recently used go first). */
  readonly maxNames: number;
  /** One resolution's time limit. */
  readonly timeoutMs: number;
  /** How long an answer of the system resolver (no TTL: /etc/hosts, search domains) is kept. */
  readonly systemTtlMs: number;
}

export const DEFAULT_DNS: DnsSettings = { minTtlMs: 1_000, maxTtlMs: 300_000, staleMs: 300_000, retryMs: 1_000, maxNames: 1_024, timeoutMs: 5_000, systemTtlMs: 30_000 };

export interface Answer {
  readonly addresses: readonly LookupAddress[];
  /** The smallest TTL of the records, ms; null: none known (the system resolver: /etc/hosts, search domains). */
  readonly ttlMs: number | null;
}

export type Resolve = (hostname: string) => Promise<Answer>;

interface Entry {
  addresses: readonly LookupAddress[];
  /** Resolved again from then on. */
  expiresAt: number;
  /** The last success; its addresses serve until lastGoodAt + expiry + staleMs. */
  goodUntil: number;
  next: number;
  pending: Promise<void> | null;
  error: Error | null;
  /** Changes whenever a new answer lists other addresses than the one before (see revision()). */
  revision: number;
  /** When the addresses were last answered (0: never). */
  resolvedAt: number;
}

/** One name as `/config_dump` shows it. */
export interface DnsName {
  readonly hostname: string;
  readonly addresses: readonly string[];
  /** When the name is resolved again (ISO). */
  readonly expiresAt: string;
  /** When its addresses were last answered (ISO), null: never. */
  readonly resolvedAt: string | null;
  /** Why the last resolution failed, null: it did not. */
  readonly error: string | null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export class DnsCache {
  readonly #entries = new Map<string, Entry>();
  readonly #resolve: Resolve;
  /** The last revision handed out: unique across names and across an entry dropped and made again. */
  #revisions = 0;

  constructor(
    readonly settings: DnsSettings,
    readonly clock: Clock,
    resolve?: Resolve,
  ) {
    this.#resolve = resolve ?? systemResolve(settings.timeoutMs);
  }

  /** `net.connect`'s lookup: cached addresses, resolved again once their TTL is over. */
  readonly lookup = (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    this.addresses(hostname).then(
      (list) => {
        const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        const usable = family ? list.filter((a) => a.family === family) : list;
        if (!usable.length) return callback(notFound(hostname, `no IPv${family} address`), options.all ? [] : '', 0);
        if (options.all) return callback(null, [...usable]);
        const a = usable[0]!;
        callback(null, a.address, a.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, options.all ? [] : '', 0),
    );
  };

  /**
   * Which answer for `hostname` is current, asking again in the background once its TTL is
   * over. A connection pool remembers the revision it was opened under and is replaced when it
   * changes: its kept-alive connections go to addresses the name no longer has (a replaced
   * Service's old ClusterIP still reaches the old pods through connection tracking), and only
   * new connections look the name up.
   */
  revision(hostname: string): number {
    const entry = this.#entries.get(hostname);
    if (!entry || this.clock() >= entry.expiresAt) this.addresses(hostname).catch(() => undefined);
    return entry?.revision ?? 0;
  }

  /** The addresses of `hostname`, rotated by one at each call so connections spread over them. */
  async addresses(hostname: string): Promise<readonly LookupAddress[]> {
    const family = isIP(hostname);
    if (family) return [{ address: hostname, family }];
    let entry = this.#entries.get(hostname);
    const now = this.clock();
    if (entry) {
      // Most recently used last: the first in the map goes when it is full.
      this.#entries.delete(hostname);
      this.#entries.set(hostname, entry);
    } else {
      if (this.#entries.size >= this.settings.maxNames) this.#entries.delete(this.#entries.keys().next().value!);
      entry = { addresses: [], expiresAt: 0, goodUntil: 0, next: 0, pending: null, error: null, revision: 0, resolvedAt: 0 };
      this.#entries.set(hostname, entry);
    }
    if (now >= entry.expiresAt) {
      entry.pending ??= this.#refresh(hostname, entry);
      // Stale addresses still good serve at once; the answer replaces them when it comes.
      if (!entry.addresses.length || now >= entry.goodUntil) await entry.pending;
    }
    if (!entry.addresses.length || this.clock() >= entry.goodUntil) throw entry.error ?? notFound(hostname, 'no address');
    const list = entry.addresses;
    const at = entry.next++ % list.length;
    return at === 0 ? list : [...list.slice(at), ...list.slice(0, at)];
  }

  async #refresh(hostname: string, entry: Entry): Promise<void> {
    const s = this.settings;
    try {
      const answer = await this.#resolve(hostname);
      if (!answer.addresses.length) throw notFound(hostname, 'no address');
      const ttl = Math.min(s.maxTtlMs, Math.max(s.minTtlMs, answer.ttlMs ?? s.systemTtlMs));
      const now = this.clock();
      if (entry.addresses.length && !sameAddresses(entry.addresses, answer.addresses)) entry.revision = ++this.#revisions;
      entry.addresses = answer.addresses;
      entry.expiresAt = now + ttl;
      entry.goodUntil = now + ttl + s.staleMs;
      entry.resolvedAt = now;
      entry.error = null;
    } catch (err) {
      entry.error = err as Error;
      // Tried again soon; the last good addresses (if any) serve until goodUntil.
      entry.expiresAt = this.clock() + s.retryMs;
    } finally {
      entry.pending = null;
    }
  }

  /** What `/config_dump` shows: each name with its addresses and when it is resolved again. */
  view(): DnsName[] {
    return [...this.#entries].map(([hostname, e]) => ({
      hostname,
      addresses: e.addresses.map((a) => a.address),
      expiresAt: new Date(e.expiresAt).toISOString(),
      resolvedAt: e.resolvedAt ? new Date(e.resolvedAt).toISOString() : null,
      error: e.error ? e.error.message : null,
    }));
  }
}

/**
 * The names of several caches (each thread resolves on its own), one entry a name: the cache
 * that resolved it last (the newest addresses any thread has), then one that never did (its
 * error says why). In the order the names first appear.
 */
export function newestNames(views: Iterable<readonly DnsName[]>): DnsName[] {
  const byName = new Map<string, DnsName>();
  for (const view of views) {
    for (const n of view) {
      const seen = byName.get(n.hostname);
      if (!seen || (n.resolvedAt ?? '') > (seen.resolvedAt ?? '')) byName.set(n.hostname, n);
    }
  }
  return [...byName.values()];
}

/** The same set of addresses, whatever their order (answers come rotated). */
function sameAddresses(a: readonly LookupAddress[], b: readonly LookupAddress[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a.map((x) => x.address));
  return b.every((x) => set.has(x.address));
}

function notFound(hostname: string, why: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`cannot resolve ${hostname}: ${why}`);
  err.code = 'ENOTFOUND';
  return err;
}

/**
 * DNS first (A and AAAA with their TTLs); a name DNS does not know (an /etc/hosts entry, a
 * short name the search domains complete) through the system resolver, with no TTL.
 */
function systemResolve(timeoutMs: number): Resolve {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  const records = (family: 4 | 6, hostname: string) =>
    new Promise<{ address: string; ttl: number }[]>((ok, fail) => {
      const done = (err: NodeJS.ErrnoException | null, list: { address: string; ttl: number }[]) => (err ? fail(err) : ok(list));
      if (family === 4) resolver.resolve4(hostname, { ttl: true }, done);
      else resolver.resolve6(hostname, { ttl: true }, done);
    });
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([records(4, hostname), records(6, hostname)]);
    const found = [...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ ...r, family: 4 })) : []), ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ ...r, family: 6 })) : [])];
    if (found.length) return { addresses: found.map((r) => ({ address: r.address, family: r.family })), ttlMs: Math.min(...found.map((r) => r.ttl)) * 1000 };
    const addresses = await new Promise<LookupAddress[]>((ok, fail) => systemLookup(hostname, { all: true }, (err, list) => (err ? fail(err) : ok(list))));
    return { addresses, ttlMs: null };
  };
}
