import { forEachTensor, mapOperation, structureKey, valueCount } from "./operation-descriptor.js";
import { DenseIdMap } from "./dense-id-map.js";
import type { OperationIr } from "./operation-ir.js";
import type { KeyNode } from "./relative-key.js";
import { KeyReader, keyRoot } from "./relative-key.js";
import type { TensorId, TensorIr } from "./tensor-ir.js";

/**
 * One operation in relative form, with its canonical key.
 *
 * **Invariant.** Two relative operations are the same graph node iff their keys are equal.
 */
export interface RelativeOperation {
  /**
   * The operation with relative ids, relative shape ids in `shape`, and placeholders for values.
   * The converter builds it lazily on first access (only explorers and fusers read it).
   */
  readonly op: OperationIr;
  /** Canonical serialisation of {@link RelativeOperation.op}: the plan-cache comparison key. */
  readonly key: string;
  /** The largest relative shape id the op names (−1 when it names none). */
  readonly maxShapeId: number;
}

/**
 * The structure nodes the last operations of the frequent kinds reached, for the trie `root`:
 * model code repeats one op name many times in a row, and a drop follows nearly every op.
 */
const lastStructure = {
  root: undefined as KeyNode | undefined,
  drop: undefined as KeyNode | undefined,
  kind: "",
  name: "",
  flag: 0,
  node: undefined as KeyNode | undefined,
};

/** The key-trie node of `op`'s structure; the frequent kinds walk interned names, not a new string. */
function structureNode(op: OperationIr): KeyNode {
  const root = keyRoot();
  const last = lastStructure;
  if (last.root !== root) {
    last.root = root;
    last.drop = root.named("drop", "");
    last.node = undefined;
  }
  switch (op.kind) {
    case "drop":
      return last.drop as KeyNode;
    case "unary":
    case "binary":
    case "binary-scalar": {
      const scalar = op.kind === "binary-scalar";
      const flag = scalar && op.scalarFirst ? 1 : 0;
      if (last.node !== undefined && last.kind === op.kind && last.name === op.op && last.flag === flag) return last.node;
      const node = scalar ? root.named("bs", "").named(op.op, ":").flag(flag) : root.named(op.kind, "").named(op.op, ":");
      last.kind = op.kind;
      last.name = op.op;
      last.flag = flag;
      last.node = node;
      return node;
    }
    default:
      return root.named(structureKey(op), "");
  }
}

/**
 * A {@link RelativeOperation} whose relative `op` is built only when asked for.
 *
 * @remarks
 * **Why lazy.** Only the explorer and the fusers look at the relative operation itself; the plan
 * cache compares keys. A repeated graph that runs from the plan cache never builds it, which is
 * most of what recording an operation used to allocate.
 * **How.** The key spells every tensor's relative id and shape ids (inputs in `operationInputs`
 * order, then the output: {@link mapOperation}'s visiting order), after the op's structure
 * prefix; `op` reads them back ({@link KeyReader}) — nothing but the key is stored per op.
 * Placeholders are `valueBase, valueBase + 1, …`.
 */
class LazyRelativeOperation implements RelativeOperation {
  readonly key: string;
  readonly maxShapeId: number;
  readonly #global: OperationIr;
  readonly #valueBase: number;
  #op: OperationIr | undefined;

  constructor(global: OperationIr, key: string, maxShapeId: number, valueBase: number) {
    this.#global = global;
    this.key = key;
    this.maxShapeId = maxShapeId;
    this.#valueBase = valueBase;
  }

  get op(): OperationIr {
    if (this.#op !== undefined) return this.#op;
    const reader = new KeyReader(this.key, structureNode(this.#global).key.length);
    let value = this.#valueBase;
    const tensor = (t: TensorIr): TensorIr => {
      const id = reader.tensor() as TensorId;
      const shape = new Array<number>(t.shape.length);
      for (let d = 0; d < t.shape.length; d++) shape[d] = reader.dim();
      return { id, shape, dtype: t.dtype, status: t.status };
    };
    this.#op = mapOperation(this.#global, tensor, () => value++);
    return this.#op;
  }
}
/**
 * The relative form of `op` from what {@link OperationConverter.convert} returned for it (its key)
 * and left in `lastMaxShapeId` / `lastValueBase`; the relative `op` is built on first access.
 */
export function relativeOperation(op: OperationIr, key: string, maxShapeId: number, valueBase: number): RelativeOperation {
  return new LazyRelativeOperation(op, key, maxShapeId, valueBase);
}

/**
 * Converts global operations into the relative form that makes repeated graphs of any ids, sizes
 * and scalar values match one cached plan. Burn's `OperationConverter`.
 *
 * @remarks
 * **Rules.** Tensor ids become dense relative ids in order of first appearance; every distinct dim
 * value becomes a dense relative shape id (dim 1 is always shape id 0, so broadcasting patterns
 * are part of the graph); every value number becomes a placeholder index (the values themselves
 * stay in the global ops the optimization receives). Statuses and dtypes are kept: a `ReadOnly`
 * and a `ReadWrite` use are different graphs.
 * **State bound.** Its maps grow with the ops converted since the last {@link reset}, i.e. with the
 * pending segment, and the queue resets it at every execution boundary.
 */
export class OperationConverter {
  /** Global id → relative id; one entry per tensor of the segment. */
  readonly #ids = new DenseIdMap();
  /** Dim value → relative shape id; dim 1 ↦ 0 always. One entry per distinct dim of the segment. */
  readonly #shapes = OperationConverter.#freshShapes();
  /** Number of placeholders handed out. */
  #scalars = 0;

  /** Number of relative shape ids assigned so far (including the reserved id 0 for dim 1). */
  get shapesAssigned(): number {
    return this.#shapes.size;
  }

  /** Forgets everything: the next op starts a new segment. */
  reset(): void {
    this.#ids.clear();
    this.#shapes.clear();
    this.#shapes.index(1);
    this.#scalars = 0;
  }

  static #freshShapes(): DenseIdMap {
    const shapes = new DenseIdMap();
    shapes.index(1);
    return shapes;
  }

  /**
   * The relative form of `op`, extending this converter's maps. Finds the key by walking the
   * process-wide key trie (`KeyNode`: no intermediate object, no `JSON.stringify`, no new
   * string once a key was seen); the relative `op` is built lazily on first access.
   */
  toRelative(op: OperationIr): RelativeOperation {
    const key = this.convert(op).key;
    return relativeOperation(op, key, this.lastMaxShapeId, this.lastValueBase);
  }

  /**
   * The key of `op`'s relative form (its trie node; the string is `.key`), extending this
   * converter's maps as {@link toRelative} does, without building the relative operation: the
   * queue stores the key (and
   * {@link lastMaxShapeId}, {@link lastValueBase}) and builds the operation only when an explorer
   * asks ({@link relativeOperation}). An object per recorded operation was a sixth of what
   * recording allocated.
   */
  convert(op: OperationIr): KeyNode {
    this.#maxShapeId = -1;
    this.#node = structureNode(op);
    forEachTensor(op, this.#visit);
    this.lastValueBase = this.#scalars;
    this.#scalars += valueCount(op);
    this.lastMaxShapeId = this.#maxShapeId;
    return this.#node;
  }

  /** The largest relative shape id the last converted operation named (−1: none). */
  lastMaxShapeId = -1;
  /** The first placeholder index of the last converted operation's values. */
  lastValueBase = 0;

  // Scratch state of the conversion in progress (one op at a time), so the visitor is one
  // closure per converter instead of one per operation.
  #maxShapeId = -1;
  #node: KeyNode = keyRoot();
  readonly #visit = (t: TensorIr): void => {
    // The maps answer their last key again without a probe (`DenseIdMap`): an op's input is most
    // often the previous op's output, and a segment's tensors share a few dims.
    const id = this.#ids.index(t.id);
    let node = this.#node.tensor(id, t.dtype, t.status);
    const shape = t.shape;
    for (let d = 0; d < shape.length; d++) {
      const dim = shape[d] as number;
      const s = this.#shapes.index(dim);
      if (s > this.#maxShapeId) this.#maxShapeId = s;
      node = node.dim(s, d === 0);
    }
    this.#node = node;
  };
}
