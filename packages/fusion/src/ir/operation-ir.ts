import type { TensorIr } from "./tensor-ir.js";

/** Elementwise functions of one tensor. `not` is logical (bool in, bool out). */
export type UnaryOp =
  | "neg" | "abs" | "exp" | "log" | "log2" | "log1p" | "expm1" | "sqrt" | "rsqrt"
  | "sin" | "cos" | "tan" | "tanh" | "sigmoid" | "relu" | "gelu" | "silu" | "erf"
  | "floor" | "ceil" | "round" | "sign" | "reciprocal" | "square" | "not";

/**
 * Elementwise functions of two tensors, broadcast. Compare and logical ops produce `bool`.
 * `floorDiv` is NumPy's `floor_divide` (`docs/semantics.md`): one op, not a composition, because
 * NumPy's float answer needs the exact remainder, which only a backend can compute.
 */
export type BinaryOp =
  | "add" | "sub" | "mul" | "div" | "pow" | "maximum" | "minimum" | "mod" | "floorDiv" | "atan2"
  | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
  | "and" | "or" | "xor";

/**
 * Reductions over axes. `argmax`/`argmin` reduce one axis and produce `i32`; `any`/`all` produce
 * `bool`; `mean` of integers is an error at the API, so it only sees floats.
 */
export type ReduceOp = "sum" | "mean" | "max" | "min" | "prod" | "argmax" | "argmin" | "any" | "all";

/** One axis of a slice: elements `start, start + step, …` while `< end` (`step > 0`). */
export interface SliceRange {
  readonly start: number;
  readonly end: number;
  readonly step: number;
}

/** A {@link SliceRange} built with `new`, as the op classes below are (see {@link InitOpIr}): a `slice` op keeps one per axis. */
export function sliceRange(start: number, end: number, step: number): SliceRange {
  return new AxisRange(start, end, step);
}

class AxisRange implements SliceRange {
  constructor(
    readonly start: number,
    readonly end: number,
    readonly step: number,
  ) {}
}

/** What a `sort` writes: the sorted values (the input's dtype) or their positions along the axis (`i32`). */
export type SortOutput = "values" | "indices";

/** The combine of a `scan`: running sum or running product. */
export type ScanOp = "sum" | "prod";

/** How a `scatter` writes a source: replaces the element (the last source wins) or adds to it (in source order). */
export type ScatterOp = "assign" | "add";

/** Which `random` distribution: `uniform` on `[a, b)`, or `normal` with mean `a` and std `b`. */
export type RandomDistribution = "uniform" | "normal";

/**
 * One operation, as recorded on a stream's queue. Burn's `OperationIr`.
 *
 * @remarks
 * **Why a closed union.** What the engine knows about each kind (its inputs, its values, its
 * relative key, its family) is one row of `OPERATIONS` (`operation-descriptor.ts`), a mapped type
 * over `kind`; the backends switch over `kind` exhaustively (`satisfies never`) where behaviour
 * differs. Adding an op is a compile error wherever it must be handled.
 * **Invariants.**
 * - Outputs are `NotInit` and carry fresh ids (SSA): a handle, once registered, is never replaced.
 * - Inputs are `ReadOnly` or `ReadWrite`; `ReadWrite` is a tensor's last use.
 * - `drop` has its tensor as only input and no output: the last wrapper died without a consuming
 *   use. A pending use followed by a `drop` in the same segment is that tensor's consuming use.
 * - Numbers that are values (scalars, bounds, fill values, seeds, slice bounds) are the parts the
 *   relative form replaces with placeholders; axes, `keepDims` and op names are structure.
 */
export type OperationIr =
  /** A tensor whose handle was registered out of band (uploaded data). */
  | { readonly kind: "init"; readonly out: TensorIr }
  /** A tensor filled with `value` (zeros, ones, full). */
  | { readonly kind: "full"; readonly out: TensorIr; readonly value: number }
  /** A 1-D tensor `start + i * step`. */
  | { readonly kind: "arange"; readonly out: TensorIr; readonly start: number; readonly step: number }
  /** Random values from a counter-based generator keyed by `seed`: same seed, same values. */
  | {
      readonly kind: "random";
      readonly out: TensorIr;
      readonly distribution: RandomDistribution;
      readonly seed: number;
      readonly a: number;
      readonly b: number;
    }
  | { readonly kind: "unary"; readonly op: UnaryOp; readonly input: TensorIr; readonly out: TensorIr }
  | { readonly kind: "binary"; readonly op: BinaryOp; readonly lhs: TensorIr; readonly rhs: TensorIr; readonly out: TensorIr }
  /** `lhs op scalar`, or `scalar op lhs` when `scalarFirst`. The scalar has `lhs`'s dtype. */
  | {
      readonly kind: "binary-scalar";
      readonly op: BinaryOp;
      readonly lhs: TensorIr;
      readonly scalar: number;
      readonly scalarFirst: boolean;
      readonly out: TensorIr;
    }
  | { readonly kind: "clamp"; readonly input: TensorIr; readonly min: number; readonly max: number; readonly out: TensorIr }
  | { readonly kind: "cast"; readonly input: TensorIr; readonly out: TensorIr }
  /** `condition ? lhs : rhs`, broadcast over all three. */
  | { readonly kind: "where"; readonly condition: TensorIr; readonly lhs: TensorIr; readonly rhs: TensorIr; readonly out: TensorIr }
  /** Reduces `axes` (sorted, distinct, non-empty); `out` keeps them as size 1 when `keepDims`. */
  | {
      readonly kind: "reduce";
      readonly op: ReduceOp;
      readonly input: TensorIr;
      readonly axes: readonly number[];
      readonly keepDims: boolean;
      readonly out: TensorIr;
    }
  /** Batched matrix product over the last two dims; batch dims broadcast. Both rank ≥ 2. */
  | { readonly kind: "matmul"; readonly lhs: TensorIr; readonly rhs: TensorIr; readonly out: TensorIr }
  /** Same elements in row-major order, new shape. */
  | { readonly kind: "reshape"; readonly input: TensorIr; readonly out: TensorIr }
  /** `out.shape[i] = input.shape[axes[i]]`. */
  | { readonly kind: "permute"; readonly input: TensorIr; readonly axes: readonly number[]; readonly out: TensorIr }
  /** Broadcast to `out.shape` (same rank; size-1 dims grow). */
  | { readonly kind: "expand"; readonly input: TensorIr; readonly out: TensorIr }
  /** One range per input dim. */
  | { readonly kind: "slice"; readonly input: TensorIr; readonly ranges: readonly SliceRange[]; readonly out: TensorIr }
  | { readonly kind: "concat"; readonly inputs: readonly TensorIr[]; readonly axis: number; readonly out: TensorIr }
  /** `out[..., i, ...] = input[..., indices[..., i, ...], ...]` along `axis`; indices are `i32`, same rank. */
  | { readonly kind: "gather"; readonly input: TensorIr; readonly indices: TensorIr; readonly axis: number; readonly out: TensorIr }
  /** Constant padding: `padding[d] = [before, after]` for every dim. */
  | {
      readonly kind: "pad";
      readonly input: TensorIr;
      readonly padding: readonly (readonly [number, number])[];
      readonly value: number;
      readonly out: TensorIr;
    }
  /**
   * A stable sort along `axis` (`docs/semantics.md`, "Issue 7's ops": NaN last ascending, first
   * descending, `-0 == 0`, ties in input order); `out` holds the first `out.shape[axis]` entries
   * of the order (all of them for `sort`, `k` for `topk`): the values, or their `i32` positions.
   */
  | {
      readonly kind: "sort";
      readonly input: TensorIr;
      readonly axis: number;
      readonly descending: boolean;
      readonly output: SortOutput;
      readonly out: TensorIr;
    }
  /** An inclusive running sum or product along `axis`; `out` has the input's shape and dtype (not `bool`). */
  | { readonly kind: "scan"; readonly op: ScanOp; readonly input: TensorIr; readonly axis: number; readonly out: TensorIr }
  /**
   * `out = input` except `out[..., indices[..., j, ...], ...]` takes `src[..., j, ...]` along
   * `axis` (`assign`: the largest `j` wins; `add`: added in `j` order). `indices` (`i32`) and `src`
   * share a shape no larger than `input` outside `axis`; an index outside `[-n, n)` is an
   * `IndexOutOfRangeError`, negative ones count from the end.
   */
  | {
      readonly kind: "scatter";
      readonly op: ScatterOp;
      readonly input: TensorIr;
      readonly indices: TensorIr;
      readonly src: TensorIr;
      readonly axis: number;
      readonly out: TensorIr;
    }
  | { readonly kind: "drop"; readonly tensor: TensorIr };

/** The `kind`s of {@link OperationIr}. */
export type OperationKind = OperationIr["kind"];

/**
 * The `init` op as a class. With the classes below (`FullOpIr` … `DropOpIr`: one per
 * {@link OperationKind}, its fields as constructor parameters in the union's order), the only way
 * the library records ops; tests may still write {@link OperationIr} literals.
 *
 * @remarks
 * **Why classes.** V8 tracks each object literal by allocation site; once a phase keeps thousands of
 * them alive (a `tidy` of many lazy ops), it marks the site "tenure" and allocates every later op of
 * that site in the old generation for the rest of the process, where they keep young objects alive
 * through scavenges. An instance from `new` is not tracked (docs/performance.md#allocation-sites).
 */
export class InitOpIr implements Extract<OperationIr, { kind: "init" }> {
  readonly kind = "init" as const;
  constructor(readonly out: TensorIr) {}
}
/** The `full` op as a class (see {@link InitOpIr}). */
export class FullOpIr implements Extract<OperationIr, { kind: "full" }> {
  readonly kind = "full" as const;
  constructor(readonly out: TensorIr, readonly value: number) {}
}
/** The `arange` op as a class (see {@link InitOpIr}). */
export class ArangeOpIr implements Extract<OperationIr, { kind: "arange" }> {
  readonly kind = "arange" as const;
  constructor(readonly out: TensorIr, readonly start: number, readonly step: number) {}
}
/** The `random` op as a class (see {@link InitOpIr}). */
export class RandomOpIr implements Extract<OperationIr, { kind: "random" }> {
  readonly kind = "random" as const;
  constructor(readonly out: TensorIr, readonly distribution: RandomDistribution, readonly seed: number, readonly a: number, readonly b: number) {}
}
/** The `unary` op as a class (see {@link InitOpIr}). */
export class UnaryOpIr implements Extract<OperationIr, { kind: "unary" }> {
  readonly kind = "unary" as const;
  constructor(readonly op: UnaryOp, readonly input: TensorIr, readonly out: TensorIr) {}
}
/** The `binary` op as a class (see {@link InitOpIr}). */
export class BinaryOpIr implements Extract<OperationIr, { kind: "binary" }> {
  readonly kind = "binary" as const;
  constructor(readonly op: BinaryOp, readonly lhs: TensorIr, readonly rhs: TensorIr, readonly out: TensorIr) {}
}
/** The `binary-scalar` op as a class (see {@link InitOpIr}). */
export class ScalarOpIr implements Extract<OperationIr, { kind: "binary-scalar" }> {
  readonly kind = "binary-scalar" as const;
  constructor(readonly op: BinaryOp, readonly lhs: TensorIr, readonly scalar: number, readonly scalarFirst: boolean, readonly out: TensorIr) {}
}
/** The `clamp` op as a class (see {@link InitOpIr}). */
export class ClampOpIr implements Extract<OperationIr, { kind: "clamp" }> {
  readonly kind = "clamp" as const;
  constructor(readonly input: TensorIr, readonly min: number, readonly max: number, readonly out: TensorIr) {}
}
/** The `cast` op as a class (see {@link InitOpIr}). */
export class CastOpIr implements Extract<OperationIr, { kind: "cast" }> {
  readonly kind = "cast" as const;
  constructor(readonly input: TensorIr, readonly out: TensorIr) {}
}
/** The `where` op as a class (see {@link InitOpIr}). */
export class WhereOpIr implements Extract<OperationIr, { kind: "where" }> {
  readonly kind = "where" as const;
  constructor(readonly condition: TensorIr, readonly lhs: TensorIr, readonly rhs: TensorIr, readonly out: TensorIr) {}
}
/** The `reduce` op as a class (see {@link InitOpIr}). */
export class ReduceOpIr implements Extract<OperationIr, { kind: "reduce" }> {
  readonly kind = "reduce" as const;
  constructor(readonly op: ReduceOp, readonly input: TensorIr, readonly axes: readonly number[], readonly keepDims: boolean, readonly out: TensorIr) {}
}
/** The `matmul` op as a class (see {@link InitOpIr}). */
export class MatmulOpIr implements Extract<OperationIr, { kind: "matmul" }> {
  readonly kind = "matmul" as const;
  constructor(readonly lhs: TensorIr, readonly rhs: TensorIr, readonly out: TensorIr) {}
}
/** The `reshape` op as a class (see {@link InitOpIr}). */
export class ReshapeOpIr implements Extract<OperationIr, { kind: "reshape" }> {
  readonly kind = "reshape" as const;
  constructor(readonly input: TensorIr, readonly out: TensorIr) {}
}
/** The `permute` op as a class (see {@link InitOpIr}). */
export class PermuteOpIr implements Extract<OperationIr, { kind: "permute" }> {
  readonly kind = "permute" as const;
  constructor(readonly input: TensorIr, readonly axes: readonly number[], readonly out: TensorIr) {}
}
/** The `expand` op as a class (see {@link InitOpIr}). */
export class ExpandOpIr implements Extract<OperationIr, { kind: "expand" }> {
  readonly kind = "expand" as const;
  constructor(readonly input: TensorIr, readonly out: TensorIr) {}
}
/** The `slice` op as a class (see {@link InitOpIr}). */
export class SliceOpIr implements Extract<OperationIr, { kind: "slice" }> {
  readonly kind = "slice" as const;
  constructor(readonly input: TensorIr, readonly ranges: readonly SliceRange[], readonly out: TensorIr) {}
}
/** The `concat` op as a class (see {@link InitOpIr}). */
export class ConcatOpIr implements Extract<OperationIr, { kind: "concat" }> {
  readonly kind = "concat" as const;
  constructor(readonly inputs: readonly TensorIr[], readonly axis: number, readonly out: TensorIr) {}
}
/** The `gather` op as a class (see {@link InitOpIr}). */
export class GatherOpIr implements Extract<OperationIr, { kind: "gather" }> {
  readonly kind = "gather" as const;
  constructor(readonly input: TensorIr, readonly indices: TensorIr, readonly axis: number, readonly out: TensorIr) {}
}
/** The `pad` op as a class (see {@link InitOpIr}). */
export class PadOpIr implements Extract<OperationIr, { kind: "pad" }> {
  readonly kind = "pad" as const;
  constructor(readonly input: TensorIr, readonly padding: readonly (readonly [number, number])[], readonly value: number, readonly out: TensorIr) {}
}
/** The `sort` op as a class (see {@link InitOpIr}). */
export class SortOpIr implements Extract<OperationIr, { kind: "sort" }> {
  readonly kind = "sort" as const;
  constructor(readonly input: TensorIr, readonly axis: number, readonly descending: boolean, readonly output: SortOutput, readonly out: TensorIr) {}
}
/** The `scan` op as a class (see {@link InitOpIr}). */
export class ScanOpIr implements Extract<OperationIr, { kind: "scan" }> {
  readonly kind = "scan" as const;
  constructor(readonly op: ScanOp, readonly input: TensorIr, readonly axis: number, readonly out: TensorIr) {}
}
/** The `scatter` op as a class (see {@link InitOpIr}). */
export class ScatterOpIr implements Extract<OperationIr, { kind: "scatter" }> {
  readonly kind = "scatter" as const;
  constructor(readonly op: ScatterOp, readonly input: TensorIr, readonly indices: TensorIr, readonly src: TensorIr, readonly axis: number, readonly out: TensorIr) {}
}
/** The `drop` op as a class (see {@link InitOpIr}). */
export class DropOpIr implements Extract<OperationIr, { kind: "drop" }> {
  readonly kind = "drop" as const;
  constructor(readonly tensor: TensorIr) {}
}
