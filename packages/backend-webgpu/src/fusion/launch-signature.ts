import { invariant } from "@weft/environment";
import type { OperationIr, TensorLocator } from "@weft/fusion";
import { locateTensor, producedAt, producerIndex } from "@weft/fusion";
import type { StreamId } from "@weft/environment";
import { contiguousHandle, type WebGpuHandle } from "../handle/webgpu-handle.js";
import type { BlockInput, BlockOutput } from "./block-graph.js";
import type { Launcher } from "./launcher.js";
import { bytesOf } from "./run-elementwise.js";

/** A block input's {@link TensorLocator} and whether it dies in the block (its handle is removed after the launch). */
export interface InputLocator extends TensorLocator {
  readonly dies: boolean;
}

/**
 * Where a block's inputs (with whether each dies in it) and written outputs (the index of the op
 * producing each) are found in `ops`, in the given orders; `undefined` when one is not there.
 */
export function locateBlock(
  ops: readonly OperationIr[],
  inputs: readonly BlockInput[],
  written: readonly BlockOutput[],
): { readonly inputs: InputLocator[]; readonly written: number[] } | undefined {
  const located: InputLocator[] = [];
  for (const input of inputs) {
    const found = locateTensor(ops, input.tensor.id);
    if (found === undefined) return undefined;
    located.push({ ...found, dies: input.dies });
  }
  const producers: number[] = [];
  for (const o of written) {
    const index = producerIndex(ops, o.tensor.id);
    if (index < 0) return undefined;
    producers.push(index);
  }
  return { inputs: located, written: producers };
}

/** Appends `dims.length` then the dims. */
export function pushDims(out: number[], dims: readonly number[]): void {
  out.push(dims.length);
  for (const d of dims) out.push(d);
}

/** Appends the output shape of every producing (non-`drop`) op of `ops`, in order. */
export function pushOutputShapes(out: number[], ops: readonly OperationIr[]): void {
  for (const op of ops) if (op.kind !== "drop") pushDims(out, op.out.shape);
}

/**
 * A fresh dense handle on `stream` for the output of each producing op `written` indexes, in
 * order: what a replayed launch writes (the launch caches' replays, like their full paths).
 */
export function denseOutputs(launcher: Launcher, stream: StreamId, ops: readonly OperationIr[], written: readonly number[]): WebGpuHandle[] {
  const outs = Array.of<WebGpuHandle>(); // not `[]`: docs/performance.md#allocation-sites
  for (const index of written) {
    const t = producedAt(ops, index);
    outs.push(contiguousHandle(launcher.empty(bytesOf(t.shape, t.dtype), stream), t.shape, t.dtype));
  }
  return outs;
}

/** Appends a handle's shape, strides and offset (its layout). */
export function pushLayout(out: number[], h: WebGpuHandle): void {
  pushDims(out, h.shape);
  for (const s of h.strides) out.push(s);
  out.push(h.offset);
}

/** Whether two of `handles` bind one allocation (such an execution needs copies and is never replayed). */
export function sharesAllocation(handles: readonly WebGpuHandle[]): boolean {
  for (let k = 1; k < handles.length; k++) {
    const m = (handles[k] as WebGpuHandle).memory;
    for (let j = 0; j < k; j++) {
      const other = (handles[j] as WebGpuHandle).memory;
      if (other.allocation === m.allocation && other.stream === m.stream) return true;
    }
  }
  return false;
}

/** Element-wise equality of two signatures (integers only: shapes, strides, offsets, sizes, flags). */
export function sameSignature(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The replayable executions of one optimization, by layout signature: at most `capacity`, the
 * most recent last, the oldest dropped first; and the scratch arrays one execution fills to look
 * itself up and replay (reused, never stored: the caller empties them when done).
 */
export class SignatureEntries<E> {
  readonly #capacity: number;
  /** Entries, oldest first; at most `capacity`. */
  readonly #entries: { readonly signature: readonly number[]; readonly entry: E }[] = [];
  /** Scratch: the current execution's signature. */
  readonly signature: number[] = [];
  /** Scratch: the current execution's input handles. */
  readonly handles: WebGpuHandle[] = [];
  /** Scratch: the current execution's parameter values. */
  readonly params: number[] = [];

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** Number of signatures held. */
  get size(): number {
    return this.#entries.length;
  }

  /** The entry stored under `signature`, newest first. */
  find(signature: readonly number[]): E | undefined {
    for (let e = this.#entries.length - 1; e >= 0; e--) {
      const held = this.#entries[e];
      if (held !== undefined && sameSignature(held.signature, signature)) return held.entry;
    }
    return undefined;
  }

  /** Stores `entry` under a copy of `signature`; returns whether the oldest entry was dropped to make room. */
  remember(signature: readonly number[], entry: E): boolean {
    this.#entries.push({ signature: signature.slice(), entry });
    if (this.#entries.length <= this.#capacity) return false;
    this.#entries.shift();
    return true;
  }
}
