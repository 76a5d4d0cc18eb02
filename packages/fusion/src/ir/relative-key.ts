import { InvariantError } from "@weft/environment";
import type { TensorIr } from "./tensor-ir.js";

const DTYPE_CHAR = ["f", "h", "i", "u", "b"] as const;
const STATUS_CHAR = ["n", "r", "w"] as const;

/** Nodes the process-wide key trie may hold before it is dropped and rebuilt (see {@link KeyNode}). */
const MAX_NODES = 1 << 17;
let nodes = 0;

/**
 * One prefix of a relative operation's key, in a process-wide trie of the keys seen so far.
 *
 * @remarks
 * **Why.** The plan cache compares relative keys at every recorded operation. Building each key
 * as a fresh string (and hashing it for the interned-id lookup) was most of an op's recording
 * cost. Walking this trie with small integers and interned names instead returns the *same*
 * string object for the same key every time: nothing is allocated once a key was seen, and the
 * string's hash is computed once.
 * **Path.** structure (kind, op name, flags; see `relative.ts`), then per tensor one node for
 * `(relative id, dtype, status)` followed by one node per relative shape id, so the path spells
 * the key unambiguously. Names, tensor openings and numbers (dims, flags) are three child spaces.
 * **Bound.** At most {@link MAX_NODES} nodes: past it the trie is dropped and started again
 * ({@link keyRoot}). Keys are compared by content everywhere, so a rebuilt trie only costs the
 * allocations again; correctness never depends on it.
 */
export class KeyNode {
  /** The key this prefix spells. */
  readonly key: string;
  /** Children by name (structure: kinds, op names, structural strings). */
  #names: Map<string, KeyNode> | undefined;
  /**
   * Tensor openings by `id × 16 + dtype × 3 + status`, read by index (an element load, where a
   * `Map` hashed: the walk is most of an operation's relative conversion).
   */
  #tensors: (KeyNode | undefined)[] | undefined;
  /** Dim and flag children (a structure node has flags, a tensor or dim node has dims: never both). */
  #numbers: (KeyNode | undefined)[] | undefined;
  /** Children past {@link NEAR} (a very long segment's ids): a `Map`, so the arrays stay dense. */
  #far: Map<number, KeyNode> | undefined;

  /**
   * The interned id of {@link KeyNode.key} in the plan store `internedBy` as of its key version
   * `internedAt` (`ExecutionPlanStore.keyIdOf`): a field compare instead of a string lookup per
   * recorded operation. Stale once the store's keys change; never read without that check.
   */
  internedBy: object | undefined = undefined;
  internedAt = -1;
  internedId = -1;

  constructor(key: string) {
    this.key = key;
    nodes++;
  }

  /** The child for a name (a kind, an op name, a structural string): key `this.key + sep + name`. */
  named(name: string, sep: string): KeyNode {
    const child = this.#names?.get(name);
    if (child !== undefined) return child;
    const node = new KeyNode(this.key + sep + name);
    (this.#names ??= new Map()).set(name, node);
    return node;
  }

  /** The child for a small flag or count `n` (≥ 0): key `this.key + ":" + n`. */
  flag(n: number): KeyNode {
    return this.#number(n, ":");
  }

  /** The child opening a tensor with relative id `id`, `dtype` and `status`. */
  tensor(id: number, dtype: TensorIr["dtype"], status: TensorIr["status"]): KeyNode {
    const d = dtypeIndex(dtype);
    const s = statusIndex(status);
    const slot = id * 16 + d * 3 + s;
    if (slot < NEAR) {
      const child = this.#tensors?.[slot];
      if (child !== undefined) return child;
    } else {
      const child = this.#far?.get(-1 - slot);
      if (child !== undefined) return child;
    }
    const node = new KeyNode(`${this.key}|${id}${DTYPE_CHAR[d] ?? "?"}${STATUS_CHAR[s] ?? "?"}`);
    if (slot < NEAR) (this.#tensors ??= [])[slot] = node;
    else (this.#far ??= new Map()).set(-1 - slot, node);
    return node;
  }

  /** The child for the next dim of the current tensor, relative shape id `shapeId`. */
  dim(shapeId: number, first: boolean): KeyNode {
    return this.#number(shapeId, first ? ":" : ",");
  }

  #number(n: number, sep: string): KeyNode {
    if (n < NEAR) {
      const child = this.#numbers?.[n];
      if (child !== undefined) return child;
    } else {
      const child = this.#far?.get(n);
      if (child !== undefined) return child;
    }
    const node = new KeyNode(this.key + sep + n);
    if (n < NEAR) (this.#numbers ??= [])[n] = node;
    else (this.#far ??= new Map()).set(n, node);
    return node;
  }
}

/**
 * Children indices below this are array elements: V8 keeps an array's elements dense while a
 * store lands within ~1,024 of its length, which these (ids of a segment × 16, shape ids) do.
 */
const NEAR = 1024;

function dtypeIndex(dtype: TensorIr["dtype"]): number {
  switch (dtype) {
    case "f32":
      return 0;
    case "f16":
      return 1;
    case "i32":
      return 2;
    case "u32":
      return 3;
    case "bool":
      return 4;
  }
}

function statusIndex(status: TensorIr["status"]): number {
  return status === "ReadOnly" ? 1 : status === "ReadWrite" ? 2 : 0;
}

let root = new KeyNode("");

/** The trie's root; starts a fresh trie when the current one reached its bound. */
export function keyRoot(): KeyNode {
  if (nodes > MAX_NODES) {
    nodes = 0;
    root = new KeyNode("");
  }
  return root;
}

/**
 * Reads a key's tensor segments back (the relative id and shape ids of each tensor, in the order
 * {@link KeyNode.tensor} and {@link KeyNode.dim} appended them), starting at `from`: the length of
 * the op's structure prefix. What the lazy relative operation is rebuilt from, so recording an op
 * stores no array of relative numbers beside its key.
 *
 * @remarks The key spells each tensor as `|<id><dtype char><status char>` followed by `:s0` and
 * `,s1`, `,s2`, … for its dims; the caller knows every tensor's rank from the global operation.
 */
export class KeyReader {
  readonly #key: string;
  #at: number;

  constructor(key: string, from: number) {
    this.#key = key;
    this.#at = from;
  }

  /** The next tensor's relative id; its `rank` relative shape ids follow through {@link KeyReader.dim}. */
  tensor(): number {
    if (this.#key.charCodeAt(this.#at) !== BAR) throw new InvariantError(`relative key "${this.#key}" has no tensor segment at ${this.#at}`);
    this.#at++;
    const id = this.#number();
    this.#at += 2; // dtype and status
    return id;
  }

  /** The current tensor's next relative shape id. */
  dim(): number {
    const c = this.#key.charCodeAt(this.#at);
    if (c !== COLON && c !== COMMA) throw new InvariantError(`relative key "${this.#key}" has no dim at ${this.#at}`);
    this.#at++;
    return this.#number();
  }

  #number(): number {
    const key = this.#key;
    let n = 0;
    let c = key.charCodeAt(this.#at);
    if (!(c >= ZERO && c <= NINE)) throw new InvariantError(`relative key "${key}" has no number at ${this.#at}`);
    while (c >= ZERO && c <= NINE) {
      n = n * 10 + (c - ZERO);
      c = key.charCodeAt(++this.#at);
    }
    return n;
  }
}

const BAR = 0x7c;
const COLON = 0x3a;
const COMMA = 0x2c;
const ZERO = 0x30;
const NINE = 0x39;
