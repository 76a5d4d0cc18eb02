/**
 * Where a block's tensors are in the operations of every execution of a cached plan: what the
 * backends' launch caches (the CPU's `launch-replay.ts`, WebGPU's `launch-signature.ts`) use to
 * replay a launch without scanning the block again. One home for both backends.
 *
 * @module
 */
import { invariant } from "@weft/environment";
import { forEachTensor, tensorAt } from "./operation-descriptor.js";
import type { OperationIr } from "./operation-ir.js";
import type { TensorId, TensorIr } from "./tensor-ir.js";

/**
 * Where one tensor of a block is found in the operations of every execution of its optimization:
 * {@link forEachTensor} position `pos` of op `op`.
 *
 * @remarks
 * Every execution of a cached plan has the same relative structure, so a position found in the
 * first execution names the same role in every later one: the launch caches locate a block's
 * inputs once and read each later execution's tensors through the locators.
 */
export interface TensorLocator {
  readonly op: number;
  readonly pos: number;
}

/** The first position of tensor `id` in `ops` (in {@link forEachTensor} order), or `undefined`. */
export function locateTensor(ops: readonly OperationIr[], id: TensorId): TensorLocator | undefined {
  for (let i = 0; i < ops.length; i++) {
    let pos = 0;
    let found = -1;
    forEachTensor(ops[i] as OperationIr, (t) => {
      if (found < 0 && t.id === id) found = pos;
      pos++;
    });
    if (found >= 0) return { op: i, pos: found };
  }
  return undefined;
}

/** The tensor at `at` in this execution's operations; an invariant error when there is none. */
export function locatedTensor(ops: readonly OperationIr[], at: TensorLocator): TensorIr {
  const op = ops[at.op];
  const t = op === undefined ? undefined : tensorAt(op, at.pos);
  invariant(t !== undefined, () => `launch cache: no tensor at op ${at.op} position ${at.pos}`);
  return t;
}

/** The index of the op that produces tensor `id` in `ops`, or -1. */
export function producerIndex(ops: readonly OperationIr[], id: TensorId): number {
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as OperationIr;
    if (op.kind !== "drop" && op.out.id === id) return i;
  }
  return -1;
}

/** The output of producing op `index` in this execution's operations; an invariant error when it produces nothing. */
export function producedAt(ops: readonly OperationIr[], index: number): TensorIr {
  const op = ops[index];
  invariant(op !== undefined && op.kind !== "drop", () => `launch cache: op ${index} produces nothing`);
  return op.out;
}

/** Whether `ops` has exactly the op kinds `kinds` (the guard of a launch cache). */
export function sameKinds(kinds: readonly OperationIr["kind"][], ops: readonly OperationIr[]): boolean {
  if (kinds.length !== ops.length) return false;
  for (let i = 0; i < ops.length; i++) if (ops[i]?.kind !== kinds[i]) return false;
  return true;
}
