// The matches that serve one hostname, indexed by path: Exact paths in a map, PathPrefix
// values in a trie of "/"-separated elements, regular expressions in a list. A lookup walks
// the request path once, so it costs about the same with ten routes as with ten thousand
// (regular expressions excepted: those are tried in turn).
//
// Rank, as the Gateway API orders it: Exact, then the longest prefix. Regular expressions
// are ranked between the two (exact > regex > prefix), as most implementations do.
//
// Every bucket is kept in precedence order as candidates come and go (a binary search, then an
// insert or a removal), so a change to one route touches only that route's buckets; a bucket or
// trie node left empty is dropped, so the index holds what a build from scratch would hold.
import { compareCandidates, comparePlace, prefixSegments, type Candidate } from './candidate.js';

class PrefixNode<R> {
  readonly children = new Map<string, PrefixNode<R>>();
  readonly candidates: Candidate<R>[] = [];
}

/** What an index holds, for checks that churn leaves no residue. */
export interface IndexSize {
  /** Exact paths, trie nodes (the root included) and regular expression entries. */
  readonly keys: number;
  readonly candidates: number;
}

/** After the last candidate that ranks before or with `c`. */
function insertSorted<R>(list: Candidate<R>[], c: Candidate<R>): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareCandidates(list[mid]!, c) <= 0) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, c);
}

function removeSorted<R>(list: Candidate<R>[], c: Candidate<R>): void {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareCandidates(list[mid]!, c) < 0) lo = mid + 1;
    else hi = mid;
  }
  // Candidates of distinct routes never compare equal; the scan is for a caller that broke that.
  const at = list[lo] === c ? lo : list.indexOf(c);
  if (at >= 0) list.splice(at, 1);
}

export class PathIndex<R> {
  readonly #exact = new Map<string, Candidate<R>[]>();
  readonly #regex: Candidate<R>[] = [];
  readonly #root = new PrefixNode<R>();
  #count = 0;

  add(c: Candidate<R>): void {
    const { type, value } = c.match.path;
    this.#count++;
    if (type === 'Exact') {
      let list = this.#exact.get(value);
      if (!list) this.#exact.set(value, (list = []));
      insertSorted(list, c);
    } else if (type === 'RegularExpression') {
      insertSorted(this.#regex, c);
    } else {
      let node = this.#root;
      for (const seg of c.prefix ?? prefixSegments(value)) {
        let next = node.children.get(seg);
        if (!next) node.children.set(seg, (next = new PrefixNode<R>()));
        node = next;
      }
      insertSorted(node.candidates, c);
    }
  }

  /** Takes out a candidate add() put in, and whatever bucket or trie branch it leaves empty. */
  remove(c: Candidate<R>): void {
    const { type, value } = c.match.path;
    this.#count--;
    if (type === 'Exact') {
      const list = this.#exact.get(value);
      if (!list) return;
      removeSorted(list, c);
      if (!list.length) this.#exact.delete(value);
    } else if (type === 'RegularExpression') {
      removeSorted(this.#regex, c);
    } else {
      const path: PrefixNode<R>[] = [this.#root];
      const segs = c.prefix ?? prefixSegments(value);
      for (const seg of segs) {
        const next = path[path.length - 1]!.children.get(seg);
        if (!next) return;
        path.push(next);
      }
      removeSorted(path[path.length - 1]!.candidates, c);
      for (let i = path.length - 1; i > 0; i--) {
        const node = path[i]!;
        if (node.candidates.length || node.children.size) break;
        path[i - 1]!.children.delete(segs[i - 1]!);
      }
    }
  }

  get empty(): boolean {
    return this.#count === 0;
  }

  size(): IndexSize {
    let nodes = 0;
    const stack = [this.#root];
    while (stack.length) {
      const node = stack.pop()!;
      nodes++;
      for (const child of node.children.values()) stack.push(child);
    }
    return { keys: this.#exact.size + this.#regex.length + nodes, candidates: this.#count };
  }

  /**
   * Every candidate (for traces): exact paths, regular expressions, then prefixes from the
   * longest. Paths and trie branches come in the order of their first route in the config,
   * whatever order the routes were added in, so an index updated in place lists what one built
   * from scratch lists.
   */
  all(): Candidate<R>[] {
    const earliest = (list: readonly Candidate<R>[]): Candidate<R> | undefined => list.reduce<Candidate<R> | undefined>((m, c) => (m && comparePlace(m, c) <= 0 ? m : c), undefined);
    const byFirst = <T>(items: T[], first: (t: T) => Candidate<R> | undefined): T[] => items.sort((a, b) => comparePlace(first(a)!, first(b)!));
    // The earliest candidate under each trie node (pruning leaves none without one).
    const least = new Map<PrefixNode<R>, Candidate<R> | undefined>();
    const under = (node: PrefixNode<R>): Candidate<R> | undefined => {
      const own = [...node.children.values()].map(under);
      const m = earliest([...node.candidates, ...own.filter((c) => c !== undefined)]);
      least.set(node, m);
      return m;
    };
    under(this.#root);
    const prefixes: Candidate<R>[][] = [];
    const walk = (node: PrefixNode<R>, depth: number): void => {
      (prefixes[depth] ??= []).push(...node.candidates);
      for (const child of byFirst([...node.children.values()], (n) => least.get(n))) walk(child, depth + 1);
    };
    walk(this.#root, 0);
    return [...byFirst([...this.#exact.values()], earliest).flat(), ...this.#regex, ...prefixes.reverse().flat()];
  }

  /**
   * The first candidate, in precedence order, whose path matches and that `accept` takes.
   * Plain loops rather than a generator: this runs on every request.
   */
  find(path: string, accept: (c: Candidate<R>) => boolean): Candidate<R> | null {
    const exact = this.#exact.get(path);
    if (exact) for (const c of exact) if (accept(c)) return c;
    for (const c of this.#regex) if (c.regex!.test(path) && accept(c)) return c;
    // Walk the trie along the path, then try the deepest (longest prefix) node first.
    const nodes: PrefixNode<R>[] = [this.#root];
    let node = this.#root;
    let start = 1;
    while (start <= path.length && node.children.size) {
      let end = path.indexOf('/', start);
      if (end < 0) end = path.length;
      const next = node.children.get(path.slice(start, end));
      if (!next) break;
      nodes.push(next);
      node = next;
      start = end + 1;
    }
    for (let i = nodes.length - 1; i >= 0; i--) for (const c of nodes[i]!.candidates) if (accept(c)) return c;
    return null;
  }
}
