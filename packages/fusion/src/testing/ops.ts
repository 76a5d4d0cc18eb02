import type { BinaryOp, ReduceOp, UnaryOp } from "../ir/operation-ir.js";
import type { DType } from "../ir/tensor-ir.js";
import type { FusionDevice } from "../device/fusion-device.js";
import type { FusionTensor } from "../tensor/fusion-tensor.js";

/**
 * Minimal tensor-op helpers over a {@link FusionDevice}, for engine tests (the real user API is
 * `@weft/tensor`). Each borrows its inputs with `intoIr` and registers one op on the current stream.
 */
/** `op(x)`. */
export function unary<H>(device: FusionDevice<H>, op: UnaryOp, x: FusionTensor): FusionTensor {
  const input = x.intoIr(op);
  return device.register({ kind: "unary", op, input, out: device.outputIr(x.shape, x.dtype) });
}

/** `a op b` (same shape or broadcast; the output takes `a`'s shape unless `b` is larger). */
export function binary<H>(device: FusionDevice<H>, op: BinaryOp, a: FusionTensor, b: FusionTensor): FusionTensor {
  const lhs = a.intoIr(op);
  const rhs = b.intoIr(op);
  const shape = a.shape.length >= b.shape.length ? a.shape : b.shape;
  return device.register({ kind: "binary", op, lhs, rhs, out: device.outputIr(shape, a.dtype) });
}

/** `a op scalar`. */
export function scalar<H>(device: FusionDevice<H>, op: BinaryOp, a: FusionTensor, value: number): FusionTensor {
  const lhs = a.intoIr(op);
  return device.register({ kind: "binary-scalar", op, lhs, scalar: value, scalarFirst: false, out: device.outputIr(a.shape, a.dtype) });
}

/** Reduces `axes` (keeping them as size 1). */
export function reduce<H>(device: FusionDevice<H>, op: ReduceOp, x: FusionTensor, axes: readonly number[]): FusionTensor {
  const input = x.intoIr(op);
  const shape = x.shape.map((d, i) => (axes.includes(i) ? 1 : d));
  return device.register({ kind: "reduce", op, input, axes, keepDims: true, out: device.outputIr(shape, x.dtype) });
}

/** A tensor filled with `value`. */
export function full<H>(device: FusionDevice<H>, shape: readonly number[], value: number, dtype: DType = "f32"): FusionTensor {
  return device.register({ kind: "full", out: device.outputIr(shape, dtype), value });
}

/** Uploads `values` (f32) with `shape`. */
export function fromValues<H>(device: FusionDevice<H>, values: readonly number[], shape: readonly number[] = [values.length]): FusionTensor {
  return device.upload({ data: Float32Array.from(values), shape, dtype: "f32" });
}
