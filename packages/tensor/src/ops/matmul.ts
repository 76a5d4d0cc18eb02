/**
 * Matrix product with NumPy's `matmul` rules.
 *
 * @remarks
 * - Both operands ≥ 2-D: a batched product over the last two dims; batch dims broadcast.
 * - A 1-D left operand is a row vector (a leading 1 is added, then removed from the result); a
 *   1-D right operand is a column vector (a trailing 1 is added, then removed). 1-D × 1-D is a dot
 *   product with shape `[]`.
 * - Operands are brought to the same rank (leading size-1 dims) before the `matmul` op, so the
 *   backend sees equal ranks whose batch dims are equal or 1.
 * - Integer and bool operands compute in `f32` (documented in `dtype/dtype.ts`).
 *
 * @module
 */
import { MatmulOpIr } from "@weft/fusion";
import { floatTypeFor, promoteTypes } from "../dtype/dtype.js";
import { ShapeError, formatShape } from "../errors/tensor-errors.js";
import { broadcastShapes } from "../shape/shape.js";
import { checkTensor } from "../tensor/arguments.js";
import type { Device } from "../device/device.js";
import { castUnchecked, checkOperandPair, output, register, release, releaseOne, use } from "../tensor/record.js";
import type { Tensor } from "../tensor/tensor.js";
import { reshapeUnchecked, sameShape } from "./layout.js";

/** `lhs @ rhs`; see the module doc for the rank rules. */
export function matmul(lhs: Tensor, rhs: Tensor): Tensor {
  checkTensor("matmul", "the left operand", lhs);
  checkTensor("matmul", "the right operand", rhs);
  const device = checkOperandPair("matmul", lhs, rhs);
  if (lhs.rank === 0 || rhs.rank === 0) {
    throw new ShapeError("matmul", [lhs.shape, rhs.shape], `shapes ${formatShape(lhs.shape)} and ${formatShape(rhs.shape)}: matmul needs operands of rank ≥ 1; use mul() for scalars`);
  }
  if (lhs.rank === 2 && rhs.rank === 2) return matmul2d(device, lhs, rhs);
  const l2 = lhs.rank === 1 ? [1, ...lhs.shape] : [...lhs.shape];
  const r2 = rhs.rank === 1 ? [...rhs.shape, 1] : [...rhs.shape];
  const k = l2[l2.length - 1] ?? 0;
  const k2 = r2[r2.length - 2] ?? 0;
  if (k !== k2) {
    throw new ShapeError("matmul", [lhs.shape, rhs.shape], `shapes ${formatShape(lhs.shape)} and ${formatShape(rhs.shape)} cannot be multiplied (inner dimensions ${k} vs ${k2}); transpose or reshape one operand`);
  }
  let batch: number[];
  try {
    batch = broadcastShapes("matmul", l2.slice(0, -2), r2.slice(0, -2));
  } catch {
    throw new ShapeError("matmul", [lhs.shape, rhs.shape], `batch dimensions of ${formatShape(lhs.shape)} and ${formatShape(rhs.shape)} cannot broadcast; reshape or expand one operand`);
  }
  const rank = batch.length + 2;
  const m = l2[l2.length - 2] ?? 0;
  const n = r2[r2.length - 1] ?? 0;
  const lFull = [...new Array<number>(rank - l2.length).fill(1), ...l2];
  const rFull = [...new Array<number>(rank - r2.length).fill(1), ...r2];
  const dtype = floatTypeFor(promoteTypes(lhs.dtype, rhs.dtype));
  const lc = lhs.dtype === dtype ? lhs : castUnchecked(lhs, dtype);
  const rc = rhs.dtype === dtype ? rhs : castUnchecked(rhs, dtype);
  // An operand already of the full rank (every 2-D product) is borrowed as is: no reshape, and
  // no temporary reference (`reshapeUnchecked` clones: a wrapper made, tracked and disposed).
  const lr = sameShape(lc.shape, lFull) ? lc : reshapeUnchecked(lc, lFull);
  const rr = sameShape(rc.shape, rFull) ? rc : reshapeUnchecked(rc, rFull);
  const product = register(device, new MatmulOpIr(use("matmul", lr), use("matmul", rr), output(device, [...batch, m, n], dtype)));
  release(lr === lc ? undefined : lr, rr === rc ? undefined : rr, lc === lhs ? undefined : lc, rc === rhs ? undefined : rc);
  const finalShape = [...batch];
  if (lhs.rank > 1) finalShape.push(m);
  if (rhs.rank > 1) finalShape.push(n);
  if (finalShape.length === rank) return product;
  const out = reshapeUnchecked(product, finalShape);
  release(product);
  return out;
}

/**
 * The product of two matrices (every layer of a dense model): what `matmul` records for rank-2
 * operands — no batch, no reshape, the same checks and errors — without the general path's
 * shape arrays (padded shapes, batch broadcast, final shape).
 */
function matmul2d(device: Device, lhs: Tensor, rhs: Tensor): Tensor {
  const m = lhs.shape[0] as number;
  const k = lhs.shape[1] as number;
  const k2 = rhs.shape[0] as number;
  const n = rhs.shape[1] as number;
  if (k !== k2) {
    throw new ShapeError("matmul", [lhs.shape, rhs.shape], `shapes ${formatShape(lhs.shape)} and ${formatShape(rhs.shape)} cannot be multiplied (inner dimensions ${k} vs ${k2}); transpose or reshape one operand`);
  }
  const dtype = floatTypeFor(promoteTypes(lhs.dtype, rhs.dtype));
  const lc = lhs.dtype === dtype ? lhs : castUnchecked(lhs, dtype);
  const rc = rhs.dtype === dtype ? rhs : castUnchecked(rhs, dtype);
  const product = register(device, new MatmulOpIr(use("matmul", lc), use("matmul", rc), output(device, [m, n], dtype)));
  if (lc !== lhs) releaseOne(lc);
  if (rc !== rhs) releaseOne(rc);
  return product;
}
