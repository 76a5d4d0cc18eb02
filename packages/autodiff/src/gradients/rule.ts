/**
 * What one entry of the gradient table (`table.ts`) says about one op: how to pull a cotangent
 * back through it, or why no cotangent flows.
 *
 * @module
 */
import type { BinaryOp, OperationIr, OperationKind, ReduceOp, UnaryOp } from "@weft/fusion";
import type { Tensor } from "@weft/tensor";

/**
 * One key per op the user API records: the IR `kind`, plus the function name where a kind has
 * several (`unary:exp`, `binary:mul`, `binary-scalar:pow`, `reduce:max`). `drop` is not an op a
 * tape sees (it is the engine's lifetime record).
 */
export type GradientKey =
  | `unary:${UnaryOp}`
  | `binary:${BinaryOp}`
  | `binary-scalar:${BinaryOp}`
  | `reduce:${ReduceOp}`
  | Exclude<OperationKind, "unary" | "binary" | "binary-scalar" | "reduce" | "drop">;

/** The operation IR a key stands for. */
export type OperationOfKey<K extends GradientKey> = K extends `unary:${string}`
  ? Extract<OperationIr, { kind: "unary" }>
  : K extends `binary-scalar:${string}`
    ? Extract<OperationIr, { kind: "binary-scalar" }>
    : K extends `binary:${string}`
      ? Extract<OperationIr, { kind: "binary" }>
      : K extends `reduce:${string}`
        ? Extract<OperationIr, { kind: "reduce" }>
        : Extract<OperationIr, { kind: K }>;

/** The key of a recorded op (see {@link GradientKey}). */
export function gradientKey(op: Exclude<OperationIr, { kind: "drop" }>): GradientKey {
  switch (op.kind) {
    case "unary":
      return `unary:${op.op}`;
    case "binary":
      return `binary:${op.op}`;
    case "binary-scalar":
      return `binary-scalar:${op.op}`;
    case "reduce":
      return `reduce:${op.op}`;
    default:
      return op.kind;
  }
}

/** What the backward of one recorded op is given. */
export interface Backward<O> {
  /** The op as recorded (its scalars, axes, ranges, shapes and dtypes). */
  readonly op: O;
  /** The cotangent of the op's output (its shape and dtype). */
  readonly g: Tensor;
  /**
   * The values of the inputs the rule saves ({@link GradientRule.saves}), in `operationInputs`
   * order; `undefined` for those it does not save.
   */
  readonly inputs: readonly (Tensor | undefined)[];
  /** The value of the output, when the rule saves it. */
  readonly output: Tensor | undefined;
  /** Which inputs want a cotangent (the others are constants to the tape: skip their work). */
  readonly needs: readonly boolean[];
}

/** Which values of a recorded op its backward reads: kept alive from the forward pass until used. */
export interface Saves {
  /** Input positions, in `operationInputs` order. */
  readonly inputs?: readonly number[];
  /** The output. */
  readonly output?: boolean;
}

/**
 * How to pull a cotangent back through one op (a vector–Jacobian product), written with the
 * Tensor API so the backward pass records and fuses like any other work.
 *
 * @remarks
 * **Saving.** {@link GradientRule.saves} names what the backward reads; the tape keeps exactly
 * those values alive (a reference each), so every other intermediate of the forward pass can be
 * fused away. It may depend on which inputs need a cotangent (`tracked`): `x @ W` with a constant
 * `x` saves `x` only.
 * **Contract.** `backward` returns one entry per input: the cotangent with that input's shape and
 * dtype, or `undefined` where none flows (a constant input, or a zero derivative). It runs inside
 * a `tidy`, so its temporaries are freed as soon as it returns.
 */
export interface GradientRule<O> {
  /** What the backward reads (default: nothing). */
  readonly saves?: Saves | ((op: O, tracked: readonly boolean[]) => Saves);
  /**
   * Whether a cotangent flows through this particular op at all (default: yes). `cast` to an
   * integer type, for instance, is not differentiable while `f32 → f16` is.
   */
  readonly differentiable?: (op: O) => boolean;
  /** The cotangents of the inputs (see the type doc). */
  readonly backward: (ctx: Backward<O>) => readonly (Tensor | undefined)[];
}

/**
 * An op no cotangent flows through, and why. `zero`: differentiable almost everywhere with
 * derivative 0 (`floor`, `sign`, …), as in JAX. `nonDifferentiable`: the output is not a real
 * number that varies smoothly (bool and integer outputs: compares, logical ops, `argmax`), or the
 * op has no tensor input (creation ops). Either way the output is a constant to every tape.
 */
export type NoGradient = { readonly zero: string } | { readonly nonDifferentiable: string };

/** One entry of the gradient table. */
export type GradientEntry<O> = GradientRule<O> | NoGradient;

/** Whether `entry` is a rule (as opposed to a documented absence of one). */
export function isRule<O>(entry: GradientEntry<O>): entry is GradientRule<O> {
  return "backward" in entry;
}
