import type { OperationIr, SliceRange } from "./operation-ir.js";
import type { TensorId, TensorIr } from "./tensor-ir.js";

/**
 * Rebuilds `op` with every tensor passed through `tensor` and every *value* number (scalars,
 * bounds, fill values, seeds, slice bounds, paddings) through `value`. Structure (kinds, op names,
 * axes, `keepDims`, dtypes) is kept. The single place that knows where values live in each kind.
 */
export function mapOperation(
  op: OperationIr,
  tensor: (t: TensorIr) => TensorIr,
  value: (v: number) => number,
): OperationIr {
  const range = (r: SliceRange): SliceRange => ({ start: value(r.start), end: value(r.end), step: value(r.step) });
  switch (op.kind) {
    case "init":
      return { kind: "init", out: tensor(op.out) };
    case "full":
      return { kind: "full", out: tensor(op.out), value: value(op.value) };
    case "arange":
      return { kind: "arange", out: tensor(op.out), start: value(op.start), step: value(op.step) };
    case "random":
      return {
        kind: "random",
        out: tensor(op.out),
        distribution: op.distribution,
        seed: value(op.seed),
        a: value(op.a),
        b: value(op.b),
      };
    case "unary":
      return { kind: "unary", op: op.op, input: tensor(op.input), out: tensor(op.out) };
    case "binary":
      return { kind: "binary", op: op.op, lhs: tensor(op.lhs), rhs: tensor(op.rhs), out: tensor(op.out) };
    case "binary-scalar":
      return {
        kind: "binary-scalar",
        op: op.op,
        lhs: tensor(op.lhs),
        scalar: value(op.scalar),
        scalarFirst: op.scalarFirst,
        out: tensor(op.out),
      };
    case "clamp":
      return { kind: "clamp", input: tensor(op.input), min: value(op.min), max: value(op.max), out: tensor(op.out) };
    case "cast":
      return { kind: "cast", input: tensor(op.input), out: tensor(op.out) };
    case "where":
      return {
        kind: "where",
        condition: tensor(op.condition),
        lhs: tensor(op.lhs),
        rhs: tensor(op.rhs),
        out: tensor(op.out),
      };
    case "reduce":
      return { kind: "reduce", op: op.op, input: tensor(op.input), axes: op.axes, keepDims: op.keepDims, out: tensor(op.out) };
    case "matmul":
      return { kind: "matmul", lhs: tensor(op.lhs), rhs: tensor(op.rhs), out: tensor(op.out) };
    case "reshape":
      return { kind: "reshape", input: tensor(op.input), out: tensor(op.out) };
    case "permute":
      return { kind: "permute", input: tensor(op.input), axes: op.axes, out: tensor(op.out) };
    case "expand":
      return { kind: "expand", input: tensor(op.input), out: tensor(op.out) };
    case "slice":
      return { kind: "slice", input: tensor(op.input), ranges: op.ranges.map(range), out: tensor(op.out) };
    case "concat":
      return { kind: "concat", inputs: op.inputs.map(tensor), axis: op.axis, out: tensor(op.out) };
    case "gather":
      return { kind: "gather", input: tensor(op.input), indices: tensor(op.indices), axis: op.axis, out: tensor(op.out) };
    case "pad":
      return {
        kind: "pad",
        input: tensor(op.input),
        padding: op.padding.map(([a, b]) => [value(a), value(b)] as const),
        value: value(op.value),
        out: tensor(op.out),
      };
    case "drop":
      return { kind: "drop", tensor: tensor(op.tensor) };
    default:
      return op satisfies never;
  }
}

/**
 * One operation in relative form, with its canonical key.
 *
 * **Invariant.** Two relative operations are the same graph node iff their keys are equal.
 */
export interface RelativeOperation {
  /** The operation with relative ids, relative shape ids in `shape`, and placeholders for values. */
  readonly op: OperationIr;
  /** Canonical serialisation of {@link RelativeOperation.op}: the plan-cache comparison key. */
  readonly key: string;
  /** The largest relative shape id the op names (−1 when it names none). */
  readonly maxShapeId: number;
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
  readonly #ids = new Map<TensorId, number>();
  /** Dim value → relative shape id; dim 1 ↦ 0 always. One entry per distinct dim of the segment. */
  readonly #shapes = new Map<number, number>([[1, 0]]);
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
    this.#shapes.set(1, 0);
    this.#scalars = 0;
  }

  /** The relative form of `op`, extending this converter's maps. */
  toRelative(op: OperationIr): RelativeOperation {
    let maxShapeId = -1;
    const tensor = (t: TensorIr): TensorIr => {
      let id = this.#ids.get(t.id);
      if (id === undefined) {
        id = this.#ids.size;
        this.#ids.set(t.id, id);
      }
      const shape = t.shape.map((d) => {
        let s = this.#shapes.get(d);
        if (s === undefined) {
          s = this.#shapes.size;
          this.#shapes.set(d, s);
        }
        if (s > maxShapeId) maxShapeId = s;
        return s;
      });
      return { id: id as TensorId, shape, dtype: t.dtype, status: t.status };
    };
    const value = (): number => this.#scalars++;
    const relative = mapOperation(op, tensor, value);
    return { op: relative, key: JSON.stringify(relative), maxShapeId };
  }
}
