/**
 * What the engine knows about each {@link OperationKind}, in one table: which fields hold its
 * input tensors, which numbers are values (the parts the relative form replaces), its structural
 * key, and how fusers may take it. Every per-kind question the engine asks — `operationInputs`,
 * `forEachTensor`, `mapOperation`, the relative key, `isElementwise` — is answered from
 * {@link OPERATIONS}; adding an op kind is one entry here (the mapped type makes a missing entry a
 * compile error).
 *
 * @module
 */
import { sliceRange, type OperationIr, type OperationKind } from "./operation-ir.js";
import type { TensorId, TensorIr } from "./tensor-ir.js";

/** The {@link OperationIr} variant of kind `K`. */
export type OperationOf<K extends OperationKind> = Extract<OperationIr, { kind: K }>;

/**
 * What an operation is, as fusers and backends see it.
 * - `init`: a tensor whose handle was registered out of band (uploaded data).
 * - `creation`: no input; each output element is a function of its index (`full`, `arange`,
 *   `random`). WebGPU fuses these into elementwise kernels as expressions; the CPU runs them alone.
 * - `elementwise`: each output element is a function of the inputs' elements at the same
 *   (broadcast) index.
 * - `reduce`, `matmul`: the op a reduce or matmul block is built around.
 * - `layout`: moves or selects elements (`reshape`, `permute`, `expand`, `slice`, `concat`,
 *   `gather`, `pad`); never fused.
 * - `kernel`: an op with a dedicated kernel of its own (`sort`, `scan`, `scatter`); never fused.
 * - `drop`: the last wrapper of a tensor died (no output).
 */
export type OperationFamily = "init" | "creation" | "elementwise" | "reduce" | "matmul" | "layout" | "kernel" | "drop";

/** The fields of `O` that hold input tensors (one tensor, or a list of them). */
type InputField<O> = {
  [F in keyof O]: F extends "out" ? never : O[F] extends TensorIr | readonly TensorIr[] ? F : never;
}[keyof O] &
  string;

/** The fields of `O` that hold one value number. */
type ValueField<O> = { [F in keyof O]: O[F] extends number ? F : never }[keyof O] & string;

/**
 * How the values (numbers that are data, not structure) of an op with nested values are counted
 * and rebuilt, in a fixed order: the order placeholders are numbered in the relative form.
 */
interface NestedValues<O> {
  readonly count: (op: O) => number;
  readonly map: (op: O, value: (v: number) => number) => O;
}

/**
 * One row of {@link OPERATIONS}.
 *
 * @remarks
 * **Invariants.** `inputs` lists the input fields in the fixed order every walk uses
 * (`operationInputs`, `forEachTensor`, `mapOperation`, the relative key); the output (`out`) comes
 * after them, and `drop` has none. `values` lists the value fields in the order their placeholders
 * are numbered; `nested` values follow them.
 */
export interface OperationDescriptor<K extends OperationKind> {
  /** What the op is (see {@link OperationFamily}). */
  readonly family: OperationFamily;
  /** Input fields, in order. */
  readonly inputs: readonly InputField<OperationOf<K>>[];
  /** Value fields, in placeholder order. */
  readonly values: readonly ValueField<OperationOf<K>>[];
  /** Values held in nested structures (slice ranges, paddings), after `values`. */
  readonly nested?: NestedValues<OperationOf<K>>;
  /**
   * Whether the op reads the element index (`arange`, `random`): fused, it must produce the
   * block's reference shape, so it can only start an elementwise chain or follow a reduction.
   */
  readonly readsIndex: boolean;
  /**
   * The structural part of the op that is not a tensor: kind, op name, axes, `keepDims`, flags,
   * and the count of nested values. Together with the tensors' relative forms it determines the
   * relative operation (the plan-cache key).
   */
  readonly structure: (op: OperationOf<K>) => string;
}

const kindOnly = <K extends OperationKind>(op: OperationOf<K>): string => op.kind;

/** Burn's per-op knowledge, one row per {@link OperationKind}. */
export const OPERATIONS: { readonly [K in OperationKind]: OperationDescriptor<K> } = {
  init: { family: "init", inputs: [], values: [], readsIndex: false, structure: kindOnly },
  full: { family: "creation", inputs: [], values: ["value"], readsIndex: false, structure: kindOnly },
  arange: { family: "creation", inputs: [], values: ["start", "step"], readsIndex: true, structure: kindOnly },
  random: {
    family: "creation",
    inputs: [],
    values: ["seed", "a", "b"],
    readsIndex: true,
    structure: (op) => `random:${op.distribution}`,
  },
  unary: { family: "elementwise", inputs: ["input"], values: [], readsIndex: false, structure: (op) => `unary:${op.op}` },
  binary: { family: "elementwise", inputs: ["lhs", "rhs"], values: [], readsIndex: false, structure: (op) => `binary:${op.op}` },
  "binary-scalar": {
    family: "elementwise",
    inputs: ["lhs"],
    values: ["scalar"],
    readsIndex: false,
    structure: (op) => (op.scalarFirst ? `bs:${op.op}:1` : `bs:${op.op}:0`),
  },
  clamp: { family: "elementwise", inputs: ["input"], values: ["min", "max"], readsIndex: false, structure: kindOnly },
  cast: { family: "elementwise", inputs: ["input"], values: [], readsIndex: false, structure: kindOnly },
  where: { family: "elementwise", inputs: ["condition", "lhs", "rhs"], values: [], readsIndex: false, structure: kindOnly },
  reduce: {
    family: "reduce",
    inputs: ["input"],
    values: [],
    readsIndex: false,
    structure: (op) => `reduce:${op.op}:${op.axes.join(",")}:${op.keepDims ? 1 : 0}`,
  },
  matmul: { family: "matmul", inputs: ["lhs", "rhs"], values: [], readsIndex: false, structure: kindOnly },
  reshape: { family: "layout", inputs: ["input"], values: [], readsIndex: false, structure: kindOnly },
  permute: { family: "layout", inputs: ["input"], values: [], readsIndex: false, structure: (op) => `permute:${op.axes.join(",")}` },
  expand: { family: "layout", inputs: ["input"], values: [], readsIndex: false, structure: kindOnly },
  slice: {
    family: "layout",
    inputs: ["input"],
    values: [],
    nested: {
      count: (op) => 3 * op.ranges.length,
      map: (op, value) => ({
        ...op,
        ranges: op.ranges.map((r) => sliceRange(value(r.start), value(r.end), value(r.step))),
      }),
    },
    readsIndex: false,
    structure: (op) => `slice:${op.ranges.length}`,
  },
  concat: { family: "layout", inputs: ["inputs"], values: [], readsIndex: false, structure: (op) => `concat:${op.axis}:${op.inputs.length}` },
  gather: { family: "layout", inputs: ["input", "indices"], values: [], readsIndex: false, structure: (op) => `gather:${op.axis}` },
  pad: {
    family: "layout",
    inputs: ["input"],
    values: [],
    nested: {
      // Paddings first, then the fill value: the order placeholders were always numbered in.
      count: (op) => 2 * op.padding.length + 1,
      map: (op, value) => ({ ...op, padding: op.padding.map(([a, b]) => Array.of(value(a), value(b)) as [number, number]), value: value(op.value) }),
    },
    readsIndex: false,
    structure: (op) => `pad:${op.padding.length}`,
  },
  sort: { family: "kernel", inputs: ["input"], values: [], readsIndex: false, structure: (op) => `sort:${op.axis}:${op.descending ? 1 : 0}:${op.output}` },
  scan: { family: "kernel", inputs: ["input"], values: [], readsIndex: false, structure: (op) => `scan:${op.op}:${op.axis}` },
  scatter: { family: "kernel", inputs: ["input", "indices", "src"], values: [], readsIndex: false, structure: (op) => `scatter:${op.op}:${op.axis}` },
  drop: { family: "drop", inputs: ["tensor"], values: [], readsIndex: false, structure: kindOnly },
};

/** The row of `op`'s kind, typed for `op`. */
export function descriptorOf<O extends OperationIr>(op: O): OperationDescriptor<O["kind"]> {
  return OPERATIONS[op.kind] as OperationDescriptor<O["kind"]>;
}

/** An untyped view of a row, for the generic walks below (the table's types guarantee the fields). */
interface Row {
  readonly inputs: readonly string[];
  readonly values: readonly string[];
  readonly nested?: NestedValues<OperationIr>;
  readonly structure: (op: OperationIr) => string;
}
const row = (op: OperationIr): Row => OPERATIONS[op.kind] as unknown as Row;
type Fields = Readonly<Record<string, TensorIr | readonly TensorIr[] | number>>;

/** The tensors an op reads, in its row's fixed order. */
export function operationInputs(op: OperationIr): readonly TensorIr[] {
  const fields = row(op).inputs;
  if (fields.length === 1) {
    const only = (op as unknown as Fields)[fields[0] as string] as TensorIr | readonly TensorIr[];
    return Array.isArray(only) ? (only as readonly TensorIr[]) : [only as TensorIr];
  }
  const out: TensorIr[] = [];
  forEachInput(op, (t) => out.push(t));
  return out;
}

/** The tensors an op writes (none for `drop`). */
export function operationOutputs(op: OperationIr): readonly TensorIr[] {
  return op.kind === "drop" ? [] : [op.out];
}

/** Inputs then outputs. */
export function operationNodes(op: OperationIr): readonly TensorIr[] {
  return [...operationInputs(op), ...operationOutputs(op)];
}

/**
 * Calls `fn` on every input of `op` in its row's order; allocates nothing.
 *
 * The kinds a model records most are read by field name (a switch on the kind), the rest through
 * the row's field list: every op walks its inputs several times on the hot path (the queue's
 * reference index, the relative key, the drain), and a read by a field name held in a variable is
 * a generic keyed load on ops of many shapes. The table stays the one definition: the descriptor
 * table's tests hold this walk to `mapOperation`'s order for every kind.
 */
export function forEachInput(op: OperationIr, fn: (t: TensorIr) => void): void {
  switch (op.kind) {
    case "unary":
    case "cast":
    case "clamp":
    case "reduce":
    case "reshape":
    case "expand":
    case "permute":
      fn(op.input);
      return;
    case "binary":
    case "matmul":
      fn(op.lhs);
      fn(op.rhs);
      return;
    case "binary-scalar":
      fn(op.lhs);
      return;
    case "drop":
      fn(op.tensor);
      return;
  }
  const fields = row(op).inputs;
  const record = op as unknown as Fields;
  for (let f = 0; f < fields.length; f++) {
    const value = record[fields[f] as string] as TensorIr | readonly TensorIr[];
    if (Array.isArray(value)) for (const t of value as readonly TensorIr[]) fn(t);
    else fn(value as TensorIr);
  }
}

/**
 * Calls `fn` on every tensor of `op` in a fixed order: inputs (in `operationInputs` order), then
 * the output. Allocates nothing: the hot-path walk (the relative form, drains, the error check).
 */
export function forEachTensor(op: OperationIr, fn: (t: TensorIr) => void): void {
  forEachInput(op, fn);
  if (op.kind !== "drop") fn(op.out);
}

/** Tensor `pos` of `op` in {@link forEachTensor}'s order (inputs, then the output); no allocation. */
export function tensorAt(op: OperationIr, pos: number): TensorIr | undefined {
  const fields = row(op).inputs;
  const record = op as unknown as Fields;
  let at = pos;
  for (let f = 0; f < fields.length; f++) {
    const value = record[fields[f] as string] as TensorIr | readonly TensorIr[];
    if (Array.isArray(value)) {
      const list = value as readonly TensorIr[];
      if (at < list.length) return list[at];
      at -= list.length;
    } else if (at-- === 0) return value as TensorIr;
  }
  return at === 0 && op.kind !== "drop" ? op.out : undefined;
}

/** Appends every value number of `op` to `out`, in placeholder order (no allocation for flat values). */
export function pushValues(op: OperationIr, out: number[]): void {
  const r = row(op);
  const record = op as unknown as Fields;
  for (let f = 0; f < r.values.length; f++) out.push(record[r.values[f] as string] as number);
  r.nested?.map(op, (v) => {
    out.push(v);
    return v;
  });
}

/** The id {@link operationReferences} looks for, and whether its walk met it (one walk at a time: it never nests). */
let soughtId = -1;
let soughtFound = false;
const seekInput = (t: TensorIr): void => {
  if (t.id === soughtId) soughtFound = true;
};

/** Whether `op` reads or writes tensor `id` (no allocation: its inputs through {@link forEachInput}). */
export function operationReferences(op: OperationIr, id: TensorId): boolean {
  if (op.kind !== "drop" && op.out.id === id) return true;
  soughtId = id;
  soughtFound = false;
  forEachInput(op, seekInput);
  return soughtFound;
}

/**
 * Rebuilds `op` with every tensor passed through `tensor` (in {@link forEachTensor}'s order) and
 * every value number through `value` (in placeholder order). Structure (kinds, op names, axes,
 * `keepDims`, dtypes) is kept.
 */
export function mapOperation(op: OperationIr, tensor: (t: TensorIr) => TensorIr, value: (v: number) => number): OperationIr {
  const r = row(op);
  const copy = { ...op } as unknown as Record<string, unknown>;
  for (const f of r.inputs) {
    const v = copy[f] as TensorIr | readonly TensorIr[];
    copy[f] = Array.isArray(v) ? (v as readonly TensorIr[]).map((t) => tensor(t)) : tensor(v as TensorIr);
  }
  if (op.kind !== "drop") copy["out"] = tensor(op.out);
  for (const f of r.values) copy[f] = value(copy[f] as number);
  const mapped = copy as unknown as OperationIr;
  return r.nested === undefined ? mapped : r.nested.map(mapped, value);
}

/** Number of value placeholders `op` takes (the order {@link mapOperation} visits them in). */
export function valueCount(op: OperationIr): number {
  // The kinds a model records most, without the table's keyed lookup (a measurable share of recording).
  switch (op.kind) {
    case "unary":
    case "binary":
    case "cast":
    case "drop":
    case "matmul":
    case "reshape":
    case "expand":
      return 0;
    case "binary-scalar":
      return 1;
  }
  const r = row(op);
  return r.values.length + (r.nested?.count(op) ?? 0);
}

/** The structural key of `op` (see {@link OperationDescriptor.structure}). */
export function structureKey(op: OperationIr): string {
  return row(op).structure(op);
}

/** The operations each output element of which is a function of the inputs' elements at its index. */
export type ElementwiseOperation = OperationOf<"unary" | "binary" | "binary-scalar" | "clamp" | "cast" | "where">;

/** The operations with no input whose elements are functions of their index. */
export type CreationOperation = OperationOf<"full" | "arange" | "random">;

/** Whether `op` is an {@link ElementwiseOperation} (its family is `elementwise`). */
export function isElementwise(op: OperationIr): op is ElementwiseOperation {
  return OPERATIONS[op.kind].family === "elementwise";
}

/** Whether `op` is a {@link CreationOperation} (its family is `creation`). */
export function isCreation(op: OperationIr): op is CreationOperation {
  return OPERATIONS[op.kind].family === "creation";
}

/** Whether `op` reads the element index (see {@link OperationDescriptor.readsIndex}). */
export function readsIndex(op: OperationIr): boolean {
  return OPERATIONS[op.kind].readsIndex;
}
