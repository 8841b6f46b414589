// The matches that serve one hostname, indexed by path: Exact paths in a map, PathPrefix
// values in a trie of "/"-separated elements, regular expressions in a list. A lookup walks
// the request path once, so it costs about the same with ten routes as with ten thousand
// (regular expressions excepted: those are tried in turn).
//
// Rank, as the Gateway API orders it: Exact, then the longest prefix. Regular expressions
// are ranked between the two (exact > regex > prefix), as most implementations do.
import { compareCandidates, prefixSegments, type Candidate } from './candidate.js';

class PrefixNode<R> {
  readonly children = new Map<string, PrefixNode<R>>();
  candidates: Candidate<R>[] = [];
}

export class PathIndex<R> {
  readonly #exact = new Map<string, Candidate<R>[]>();
  readonly #regex: Candidate<R>[] = [];
  readonly #root = new PrefixNode<R>();

  add(c: Candidate<R>): void {
    const { type, value } = c.match.path;
    if (type === 'Exact') {
      let list = this.#exact.get(value);
      if (!list) this.#exact.set(value, (list = []));
      list.push(c);
    } else if (type === 'RegularExpression') {
      this.#regex.push(c);
    } else {
      let node = this.#root;
      for (const seg of c.prefix ?? prefixSegments(value)) {
        let next = node.children.get(seg);
        if (!next) node.children.set(seg, (next = new PrefixNode<R>()));
        node = next;
      }
      node.candidates.push(c);
    }
  }

  /** Sorts every bucket by precedence; call once after the last add(). */
  seal(): void {
    for (const list of this.#exact.values()) list.sort(compareCandidates);
    this.#regex.sort(compareCandidates);
    const stack = [this.#root];
    while (stack.length) {
      const node = stack.pop()!;
      node.candidates.sort(compareCandidates);
      stack.push(...node.children.values());
    }
  }

  /** Every candidate: exact paths, regular expressions, then prefixes from the longest (for traces). */
  all(): Candidate<R>[] {
    const prefixes: Candidate<R>[][] = [];
    const walk = (node: PrefixNode<R>, depth: number): void => {
      (prefixes[depth] ??= []).push(...node.candidates);
      for (const child of node.children.values()) walk(child, depth + 1);
    };
    walk(this.#root, 0);
    return [...[...this.#exact.values()].flat(), ...this.#regex, ...prefixes.reverse().flat()];
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
