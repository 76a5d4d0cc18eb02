/**
 * The two halves every op follows: *validate* (liveness, device, shapes, dtypes — no side effect)
 * and then *record* (borrow the inputs' IR, take a fresh output IR, register).
 *
 * @remarks
 * **Why split.** docs/design.md#semantics: a bad call throws at the call and leaves all state intact. So
 * nothing here that registers may run before every check of the op passed; the checks are pure.
 * **Temporaries.** Ops that cast or compose (softmax, variance, …) create intermediate tensors and
 * dispose them right after registering their last consumer. The dispose then registers a `drop`
 * after a pending use, which the fusers treat as that use being the consuming one (docs/design.md#semantics),
 * so intermediates are never written to memory when they fuse.
 *
 * @module
 */
import { invariant } from "@weft/environment";
import { CastOpIr, type DType, type ProducingOperation, type TensorIr } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { DeviceMismatchError } from "../errors/tensor-errors.js";
import { observer } from "./observer.js";
import { Tensor, fusionTensorOf } from "./tensor.js";

/**
 * {@link checkOperands} for one operand (no array per call: the hot path of unary and scalar ops).
 * Throws, naming `op`, when `t` was disposed; returns its device. Pure: registers nothing.
 */
export function checkOperand(op: string, t: Tensor): Device {
  if (t.disposed) {
    fusionTensorOf(t).intoIr(op);
    invariant(false, `${op}: a disposed tensor accepted a use`);
  }
  return t.device;
}

/**
 * {@link checkOperands} of two tensors (a binary op, a matmul) without building their array: the
 * same checks in the same order, the same errors.
 */
export function checkOperandPair(op: string, a: Tensor, b: Tensor): Device {
  checkOperand(op, a);
  checkOperand(op, b);
  if (b.device !== a.device) throw new DeviceMismatchError(op, a.device.name, b.device.name);
  return a.device;
}

/**
 * Throws, naming `op`, when any of `tensors` was disposed or when they live on different devices.
 * Returns their common device. Pure: registers nothing.
 */
export function checkOperands(op: string, tensors: readonly Tensor[], expected?: Device): Device {
  for (const t of tensors) {
    if (t.disposed) {
      // The fusion tensor raises the contract's DisposedTensorError (naming `op`) for a use after
      // dispose, before it touches any state.
      fusionTensorOf(t).intoIr(op);
      invariant(false, `${op}: a disposed tensor accepted a use`);
    }
  }
  const first = expected ?? tensors[0]?.device;
  invariant(first !== undefined, `${op}: checkOperands needs a tensor or a device`);
  for (const t of tensors) {
    if (t.device !== first) throw new DeviceMismatchError(op, first.name, t.device.name);
  }
  return first;
}

/** The inputs of an op being built: borrow each operand's IR under `op`'s name (an installed observer is told). */
export function use(op: string, t: Tensor): TensorIr {
  const ir = fusionTensorOf(t).intoIr(op);
  if (observer !== undefined) observer.input(t, ir);
  return ir;
}

/** A fresh `NotInit` output IR on `device`. */
export function output(device: Device, shape: readonly number[], dtype: DType): TensorIr {
  return device.fusion.outputIr(shape, dtype);
}

/** Registers `operation` and wraps its output (an installed observer is told). */
export function register(device: Device, operation: ProducingOperation): Tensor {
  const wrapped = Tensor.wrap(device.fusion.register(operation), device);
  if (observer !== undefined) observer.recorded(operation, wrapped);
  return wrapped;
}

/** {@link release} of one intermediate (no rest array): disposes `t` unless it is `undefined` or disposed. */
export function releaseOne(t: Tensor | undefined): void {
  if (t !== undefined && !t.disposed) t.dispose();
}

/**
 * Disposes the intermediates an op created, in order (the last consumer is already registered, so
 * each dispose makes that consumer the tensor's consuming use).
 */
export function release(...temps: (Tensor | undefined)[]): void {
  for (const t of temps) if (t !== undefined && !t.disposed) t.dispose();
}

/**
 * Runs `body` with `t` converted to `dtype` (a registered `cast` when it differs), disposing the
 * converted temporary afterwards. `body` must register every use of the converted tensor.
 */
export function withDType<T>(t: Tensor, dtype: DType, body: (converted: Tensor) => T): T {
  if (t.dtype === dtype) return body(t);
  const converted = castUnchecked(t, dtype);
  try {
    return body(converted);
  } finally {
    release(converted);
  }
}

/** Registers a `cast` without validation (callers validated liveness and the dtype). */
export function castUnchecked(t: Tensor, dtype: DType): Tensor {
  const input = use("cast", t);
  return register(t.device, new CastOpIr(input, output(t.device, t.shape, dtype)));
}
