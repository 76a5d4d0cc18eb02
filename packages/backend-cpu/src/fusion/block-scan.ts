import type { OperationIr, TensorId, TensorIr, TensorStatus } from "@weft/fusion";
import { operationInputs } from "@weft/fusion";
import { UnsupportedError } from "@weft/environment";

/**
 * What a fused block's operations say about the tensors they touch: what both CPU optimizations
 * (`ElementwiseOptimization`, `MatmulEpilogueOptimization`) decide their writes, their inputs and
 * their frees from.
 */
export interface BlockScan {
  /**
   * Each touched tensor's latest status in the block: an input's status at its last read
   * (`ReadWrite` when that read, or a `drop`, ends its life), `NotInit` for an output read by no
   * later op of the block. An output whose latest status is `ReadWrite` dies in the block and is
   * never written.
   */
  readonly last: Map<TensorId, TensorStatus>;
  /** The tensors the block's ops produce, in op order. */
  readonly produced: Map<TensorId, TensorIr>;
  /** The tensors it reads from outside (before any op of the block produced them), in first-use order. */
  readonly external: Map<TensorId, TensorIr>;
}

/**
 * Scans `operations` once (see {@link BlockScan}).
 *
 * @throws UnsupportedError for an f16 input or output: the CPU backend has no f16 (naming `block`).
 */
export function scanBlock(operations: readonly OperationIr[], block: string): BlockScan {
  const last = new Map<TensorId, TensorStatus>();
  const produced = new Map<TensorId, TensorIr>();
  const external = new Map<TensorId, TensorIr>();
  for (const op of operations) {
    for (const input of operationInputs(op)) {
      if (input.dtype === "f16" || (op.kind !== "drop" && op.out.dtype === "f16")) throw new UnsupportedError("f16 on the CPU backend", `fused ${block} block: use f32`);
      if (!produced.has(input.id) && !external.has(input.id)) external.set(input.id, input);
      last.set(input.id, op.kind === "drop" ? "ReadWrite" : input.status);
    }
    if (op.kind === "drop") continue;
    produced.set(op.out.id, op.out);
    last.set(op.out.id, "NotInit");
  }
  return { last, produced, external };
}
