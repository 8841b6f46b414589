// The client connections open on each bind, counted across the proxy's worker threads, so
// config.maxConnectionsPerBind caps the pod rather than each thread (every thread listens on the
// same port, reusePort, and the kernel spreads connections among them). One thread's cap is
// node:net's server.maxConnections; across threads the count lives in one SharedArrayBuffer
// the main thread creates (create()) and hands to each worker at its start (`buffer`,
// structured-cloneable); each thread wraps it with its own worker index. No message between
// threads per connection: an accept is a compare-and-swap loop on the bind's count, a close
// two subtractions.
//
// The table is small and fixed: at most `binds` keys (default 256), each "address:port" of at
// most KEY_BYTES bytes of UTF-8. Whoever first uses a key allocates its row, under a lock held
// only for that; rows are published by the row count, so looking a key up takes no lock. A row
// stays for the life of the table (its count is 0 once its bind is gone): 256 distinct binds
// over the pod's life, far more than a gateway's listeners. A key beyond that is refused with
// an error naming the bound (a reload that adds it is refused; the running config serves on).
//
// Beside each bind's count, each worker has a column of the connections it holds, so those of
// a thread that dies return to the cap: the main thread calls releaseWorker(w) once that worker
// has exited. Counts and columns are updated in the order that, should a thread die between
// the two, leaves a connection counted rather than lost: the cap may lose one connection to a
// dying thread, never be exceeded.
import type { Server, Socket } from 'node:net';
import { TollgateError } from '../errors.js';

/** Binds the table holds by default. */
export const DEFAULT_SHARED_BINDS = 256;
/** The longest key, in bytes of UTF-8 (an IPv6 address with a zone, a colon and a port fit). */
export const KEY_BYTES = 124;

// Int32 words. Header, on a cache line of its own:
const LOCK = 0; // 0 free, else 1 + the index of the worker holding it
const ROWS = 1; // rows allocated (published)
const CAPACITY = 2;
const WORKERS = 3;
const MAGIC = 4;
const HEADER_WORDS = 16;
const TAG = 0x54474353; // "TGCS"
/** Per row: the key's byte length, then its bytes. */
const KEY_WORDS = 1 + KEY_BYTES / 4;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function layout(capacity: number, workers: number) {
  const keys = HEADER_WORDS;
  const counts = keys + capacity * KEY_WORDS;
  const columns = counts + capacity;
  return { keys, counts, columns, words: columns + workers * capacity };
}

export class ConnectionSlots {
  /** Threads sharing the table (worker 0, the main thread, included). */
  readonly workers: number;
  /** Binds the table holds at most. */
  readonly capacity: number;
  readonly #words: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #at: ReturnType<typeof layout>;
  readonly #column: number;
  /** Rows already found by this thread. */
  readonly #known = new Map<string, number>();

  /**
   * The main thread's table (worker 0) over new shared memory for `workers` threads; each other
   * worker gets `slots.buffer` and wraps it with its own index.
   */
  static create(workers: number, binds = DEFAULT_SHARED_BINDS): ConnectionSlots {
    if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`a shared connection table needs at least one worker, got ${workers}`);
    if (!Number.isInteger(binds) || binds < 1) throw new RangeError(`a shared connection table holds at least one bind, got ${binds}`);
    const words = new Int32Array(new SharedArrayBuffer(layout(binds, workers).words * 4));
    words[CAPACITY] = binds;
    words[WORKERS] = workers;
    words[MAGIC] = TAG;
    return new ConnectionSlots(words.buffer, 0);
  }

  /** `buffer`: what create() made (`slots.buffer`); `worker`: this thread's index, 0 the main thread. */
  constructor(
    readonly buffer: SharedArrayBuffer,
    readonly worker: number,
  ) {
    this.#words = new Int32Array(buffer);
    this.#bytes = new Uint8Array(buffer);
    this.capacity = this.#words[CAPACITY]!;
    this.workers = this.#words[WORKERS]!;
    this.#at = layout(this.capacity, this.workers);
    if (this.#words[MAGIC] !== TAG || buffer.byteLength !== this.#at.words * 4) throw new TypeError('the buffer is not a shared connection table: ConnectionSlots.create() makes one');
    this.#column = this.#columnOf(worker);
  }

  /** The row of bind `key` ("address:port"), allocated on first use by any thread. */
  slot(key: string): number {
    const known = this.#known.get(key);
    if (known !== undefined) return known;
    const bytes = encoder.encode(key);
    if (bytes.length > KEY_BYTES) throw new TollgateError('TG_BIND_FAILED', `bind ${key}: its key is ${bytes.length} bytes; the connection table the worker threads share keys binds of at most ${KEY_BYTES}`);
    let row = this.#find(bytes, 0, Atomics.load(this.#words, ROWS));
    if (row < 0) row = this.#allocate(key, bytes);
    this.#known.set(key, row);
    return row;
  }

  /** Opens a connection on `slot` when fewer than `limit` are open there across the threads. */
  acquire(slot: number, limit: number): boolean {
    const words = this.#words;
    const at = this.#at.counts + slot;
    let open = Atomics.load(words, at);
    for (;;) {
      if (open >= limit) return false;
      const seen = Atomics.compareExchange(words, at, open, open + 1);
      if (seen === open) break;
      open = seen;
    }
    Atomics.add(words, this.#column + slot, 1);
    return true;
  }

  /** A connection this thread opened on `slot` closed. */
  release(slot: number): void {
    Atomics.sub(this.#words, this.#column + slot, 1);
    Atomics.sub(this.#words, this.#at.counts + slot, 1);
  }

  /** Connections open now on bind `key`, across the threads (0 for a key never used). */
  open(key: string): number {
    const row = this.#known.get(key) ?? this.#find(encoder.encode(key), 0, Atomics.load(this.#words, ROWS));
    return row < 0 ? 0 : Atomics.load(this.#words, this.#at.counts + row);
  }

  /** Connections worker `w` holds now, on every bind. */
  heldBy(w: number): number {
    const from = this.#columnOf(w);
    let n = 0;
    for (let row = 0; row < this.capacity; row++) n += Atomics.load(this.#words, from + row);
    return n;
  }

  /** The keys allocated so far, in the order they were. */
  keys(): string[] {
    const rows = Atomics.load(this.#words, ROWS);
    return Array.from({ length: rows }, (_, row) => decoder.decode(this.#keyBytes(row).slice()));
  }

  /**
   * Releases every connection worker `w` held, and the allocation lock should it have died
   * holding it; only once that thread has exited (a live one would release its connections a
   * second time). Returns the connections released.
   */
  releaseWorker(w: number): number {
    const from = this.#columnOf(w);
    let released = 0;
    for (let row = 0; row < this.capacity; row++) {
      const held = Atomics.exchange(this.#words, from + row, 0);
      if (held !== 0) Atomics.sub(this.#words, this.#at.counts + row, held);
      released += held;
    }
    if (Atomics.compareExchange(this.#words, LOCK, w + 1, 0) === w + 1) Atomics.notify(this.#words, LOCK);
    return released;
  }

  /**
   * Caps `server`'s connections at `limit` across the threads, counted under `key`: beyond it a
   * new connection is closed at once, before any of the server's own connection handling sees
   * it (as node:net does past maxConnections), and `refused` is called. Installed after every
   * other 'connection' listener of the server, which it then calls for the connections it lets
   * in. Throws, before the server listens, when the table has no row left for the key.
   */
  guard(server: Server, key: string, limit: number, refused: () => void): void {
    const slot = this.slot(key);
    const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) => {
      if (!this.acquire(slot, limit)) {
        socket.destroy();
        refused();
        return;
      }
      socket.once('close', () => this.release(slot));
      for (const handler of handlers) handler.call(server, socket);
    });
  }

  #columnOf(w: number): number {
    if (!Number.isInteger(w) || w < 0 || w >= this.workers) throw new RangeError(`worker ${w} is not one of the connection table's ${this.workers} workers (0 to ${this.workers - 1})`);
    return this.#at.columns + w * this.capacity;
  }

  #keyBytes(row: number): Uint8Array {
    const at = (this.#at.keys + row * KEY_WORDS) * 4;
    return this.#bytes.subarray(at + 4, at + 4 + this.#words[this.#at.keys + row * KEY_WORDS]!);
  }

  /** The row among [from, to) whose key is `bytes`, or -1. */
  #find(bytes: Uint8Array, from: number, to: number): number {
    for (let row = from; row < to; row++) {
      const k = this.#keyBytes(row);
      if (k.length === bytes.length && k.every((b, i) => b === bytes[i])) return row;
    }
    return -1;
  }

  #allocate(key: string, bytes: Uint8Array): number {
    const words = this.#words;
    const me = this.worker + 1;
    for (;;) {
      const holder = Atomics.compareExchange(words, LOCK, 0, me);
      if (holder === 0) break;
      Atomics.wait(words, LOCK, holder);
    }
    try {
      // Another thread may have allocated it while this one waited.
      const rows = Atomics.load(words, ROWS);
      const row = this.#find(bytes, 0, rows);
      if (row >= 0) return row;
      if (rows >= this.capacity) throw new TollgateError('TG_BIND_FAILED', `bind ${key}: the connection table the worker threads share is full (${this.capacity} binds, the most it holds); use fewer distinct binds (address:port)`);
      const at = this.#at.keys + rows * KEY_WORDS;
      words[at] = bytes.length;
      this.#bytes.set(bytes, (at + 1) * 4);
      // The key's bytes are written before the row count that publishes them (a seq-cst store).
      Atomics.store(words, ROWS, rows + 1);
      return rows;
    } finally {
      Atomics.store(words, LOCK, 0);
      Atomics.notify(words, LOCK);
    }
  }
}
