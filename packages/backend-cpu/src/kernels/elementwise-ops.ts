/**
 * How each elementwise IR operation (`isElementwise` of `@weft/fusion`'s operation table) becomes
 * a step of an {@link ElementwiseProgramBuilder} program. Shared by the unfused path and the fused
 * elementwise optimization, so both evaluate the same scalar code.
 *
 * @module
 */
import type { ElementwiseOperation, OperationIr, TensorIr } from "@weft/fusion";
import { convert } from "../numerics/scalar-ops.js";
import type { ElementwiseProgramBuilder, Register } from "./elementwise-kernel.js";

/** Appends `op`'s step to `builder`, reading its inputs through `load`; returns its output's register. */
export function appendElementwise(builder: ElementwiseProgramBuilder, op: ElementwiseOperation, load: (tensor: TensorIr) => Register): Register {
  switch (op.kind) {
    case "unary":
      return builder.unary(op.op, load(op.input), op.input.dtype, op.out.dtype);
    case "binary":
      return builder.binary(op.op, load(op.lhs), load(op.rhs), op.lhs.dtype, op.out.dtype);
    case "binary-scalar":
      return builder.binaryScalar(op.op, load(op.lhs), op.scalar, op.scalarFirst, op.lhs.dtype, op.out.dtype);
    case "clamp":
      return builder.clamp(load(op.input), op.min, op.max, op.out.dtype);
    case "cast":
      return builder.cast(load(op.input), op.input.dtype, op.out.dtype);
    case "where":
      return builder.where(load(op.condition), load(op.lhs), load(op.rhs), op.out.dtype);
    default:
      return op satisfies never;
  }
}

/**
 * Writes the uniforms {@link appendElementwise} makes `op`'s step push (its scalar values,
 * converted as the builder converts them) into `out` from `at`, in the same order; returns the
 * index after them (`at` for an op without scalars). What a replayed fused launch sends instead of
 * building the program again (`fusion/launch-replay.ts`): the two must agree value for value
 * (tested).
 */
export function writeUniforms(op: OperationIr, out: Float64Array, at: number): number {
  switch (op.kind) {
    case "binary-scalar":
      out[at] = convert(op.scalar, op.lhs.dtype);
      return at + 1;
    case "clamp":
      out[at] = convert(op.min, op.out.dtype);
      out[at + 1] = convert(op.max, op.out.dtype);
      return at + 2;
    default:
      return at;
  }
}
