/**
 * What one node of a {@link DependencyGraph} does with the segment's tensors: the resources
 * (relative tensor ids) it produces, reads from outside itself, and frees, and where it sits in
 * stream order. A node is one operation, or a chunk of operations executed as one unit.
 *
 * @remarks
 * **Freed.** A node frees a tensor when it holds that tensor's last use: a `ReadWrite` input or a
 * `drop`. A chunk that produces *and* frees a tensor lists it in both `produced` and `freed`, so
 * a reader in another chunk is still ordered before the free.
 */
export interface GraphNode {
  readonly produced: readonly number[];
  /** Resources read and not produced by this node (a chunk's external inputs). */
  readonly read: readonly number[];
  readonly freed: readonly number[];
  /** The node's (first) position in stream order: ties of the topological order are broken by it. */
  readonly position: number;
}

/**
 * Row-per-node bit sets of which nodes reach which: `reaches(a, b)` is true when a path of
 * dependency edges leads from `a` to `b` (`b` must run after `a`). Works for any number of nodes
 * (32 per word), not only 64.
 */
export class Reachability {
  readonly #words: number;
  readonly #bits: Uint32Array;

  /** @internal Built by {@link DependencyGraph.reachability}. */
  constructor(size: number, bits: Uint32Array) {
    this.#words = Math.ceil(size / 32);
    this.#bits = bits;
  }

  /** Whether `to` must run after `from` (a non-empty path from `from` to `to`). */
  reaches(from: number, to: number): boolean {
    const word = this.#bits[from * this.#words + (to >>> 5)] ?? 0;
    return (word & (1 << (to & 31))) !== 0;
  }
}

/**
 * The hazard graph of a list of {@link GraphNode}s: an edge `a → b` says `b` must run after `a`.
 * Burn's `Dag` (`search/graph/dag.rs`).
 *
 * @remarks
 * **Edges.**
 * - Read after write: `b` reads a resource `a` produces.
 * - Write after read: `b` frees a resource `a` reads (a `drop` or consuming use runs after every
 *   other reader, so no reader ever sees a freed or reused buffer).
 * **Ordering.** {@link DependencyGraph.topologicalOrder} takes, among the nodes whose predecessors
 * all ran, the one with the smallest position: an edge-free graph reproduces stream order, and a
 * node never moves before a node it depends on however small its position.
 * **Cost.** Building is linear in the nodes' resources plus the edges; a graph of operations of one
 * segment is bounded by the queue limit.
 */
export class DependencyGraph {
  /** Successors of each node, deduplicated. */
  readonly successors: readonly (readonly number[])[];
  /** Predecessors of each node, deduplicated. */
  readonly predecessors: readonly (readonly number[])[];
  readonly #nodes: readonly GraphNode[];

  constructor(nodes: readonly GraphNode[]) {
    this.#nodes = nodes;
    const producers = new Map<number, number[]>();
    const readers = new Map<number, number[]>();
    nodes.forEach((node, i) => {
      for (const r of node.produced) push(producers, r, i);
      for (const r of node.read) push(readers, r, i);
    });
    const succ = nodes.map(() => new Set<number>());
    const pred = nodes.map(() => new Set<number>());
    const edge = (from: number, to: number): void => {
      if (from === to) return;
      succ[from]?.add(to);
      pred[to]?.add(from);
    };
    nodes.forEach((node, i) => {
      for (const r of node.read) for (const p of producers.get(r) ?? []) edge(p, i);
      for (const r of node.freed) for (const reader of readers.get(r) ?? []) edge(reader, i);
    });
    this.successors = succ.map((s) => [...s]);
    this.predecessors = pred.map((p) => [...p]);
  }

  /** Number of nodes. */
  get size(): number {
    return this.#nodes.length;
  }

  /**
   * The nodes in an order where every node follows its predecessors, ties broken by the smaller
   * position; `undefined` when the graph has a cycle (no such order exists).
   */
  topologicalOrder(): number[] | undefined {
    const n = this.#nodes.length;
    const pending = this.predecessors.map((p) => p.length);
    const ready: number[] = [];
    for (let i = 0; i < n; i++) if (pending[i] === 0) ready.push(i);
    const order: number[] = [];
    while (ready.length > 0) {
      let at = 0;
      for (let k = 1; k < ready.length; k++) if (this.#position(ready[k]) < this.#position(ready[at])) at = k;
      const [next] = ready.splice(at, 1);
      if (next === undefined) break;
      order.push(next);
      for (const s of this.successors[next] ?? []) {
        const left = (pending[s] ?? 0) - 1;
        pending[s] = left;
        if (left === 0) ready.push(s);
      }
    }
    return order.length === n ? order : undefined;
  }

  /** Whether the graph has no cycle. */
  isAcyclic(): boolean {
    return this.topologicalOrder() !== undefined;
  }

  /**
   * Which nodes reach which, by transitive closure over a topological order (each node's row is
   * the union of its successors' rows and the successors themselves).
   * @throws RangeError when the graph has a cycle.
   */
  reachability(): Reachability {
    const order = this.topologicalOrder();
    if (order === undefined) throw new RangeError("reachability of a cyclic dependency graph");
    const n = this.#nodes.length;
    const words = Math.ceil(n / 32);
    const bits = new Uint32Array(n * words);
    for (let k = order.length - 1; k >= 0; k--) {
      const node = order[k] ?? 0;
      const row = node * words;
      for (const s of this.successors[node] ?? []) {
        bits[row + (s >>> 5)] = (bits[row + (s >>> 5)] ?? 0) | (1 << (s & 31));
        const srow = s * words;
        for (let w = 0; w < words; w++) bits[row + w] = (bits[row + w] ?? 0) | (bits[srow + w] ?? 0);
      }
    }
    return new Reachability(n, bits);
  }

  #position(i: number | undefined): number {
    return i === undefined ? Infinity : (this.#nodes[i]?.position ?? Infinity);
  }
}

function push(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/**
 * Whether running `nodes` in the given order respects every tensor lifetime: no node reads a
 * resource another node of the order produces before that node ran, and none reads a resource
 * after a node freed it. Resources no node produces are external inputs, live from the start.
 * Burn's `is_valid_execution_order` (`search/graph/lifetime.rs`).
 */
export function isValidExecutionOrder(nodes: Iterable<GraphNode>): boolean {
  const list = [...nodes];
  const producedSomewhere = new Set<number>();
  for (const node of list) for (const r of node.produced) producedSomewhere.add(r);
  const alive = new Set<number>();
  const freed = new Set<number>();
  for (const node of list) {
    for (const r of node.read) {
      if (freed.has(r)) return false;
      if (producedSomewhere.has(r) && !alive.has(r)) return false;
    }
    for (const r of node.produced) {
      if (freed.has(r)) return false;
      alive.add(r);
    }
    for (const r of node.freed) freed.add(r);
  }
  return true;
}
