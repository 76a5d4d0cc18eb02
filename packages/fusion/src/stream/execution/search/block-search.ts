import type { OperationIr } from "../../../ir/operation-ir.js";
import { forEachTensor } from "../../../ir/operation-descriptor.js";
import { acceptedBy, type OperationFuser } from "../../../runtime/fusion-runtime.js";
import { bestReady, freshFuser } from "./schedule-blocks.js";

/** The {@link BlockSearch} cap on blocks per segment (Burn's `max_blocks` defaults to 5; docs/fusion-search.md). */
export const DEFAULT_MAX_BLOCKS = 16;

/**
 * The operations of a segment that share tensors, with their own fusers fed in stream order.
 * Burn's `Block`.
 *
 * **Invariant.** `fusers` were fed exactly `positions`' operations, in that order.
 */
class Block<O> {
  readonly positions: number[] = [];
  /** Relative ids of every tensor the block's operations touch. */
  readonly ids = new Set<number>();
  readonly fusers: OperationFuser<O>[];

  constructor(prototypes: readonly OperationFuser<O>[]) {
    this.fusers = prototypes.map(freshFuser);
  }

  add(op: OperationIr, position: number): void {
    this.positions.push(position);
    forEachTensor(op, (t) => this.ids.add(t.id));
    for (const f of this.fusers) if (f.status() === "open") f.fuse(op);
  }

  touches(op: OperationIr): boolean {
    let found = false;
    forEachTensor(op, (t) => {
      if (this.ids.has(t.id)) found = true;
    });
    return found;
  }

  /** Some fuser is still open: later operations may still extend the block's fusion. */
  get open(): boolean {
    return this.fusers.some((f) => f.status() === "open");
  }

  /** Some fuser accepted every operation of the block. */
  get wholeAccepted(): boolean {
    return this.fusers.some((f) => acceptedBy(f) === this.positions.length);
  }

  /**
   * A lone block: no fuser took its first operation, so it is that operation run unfused and
   * nothing else ever fuses with it. Later operations using its tensors start blocks of their own.
   */
  get lone(): boolean {
    return this.positions.length === 1 && this.fusers.every((f) => acceptedBy(f) === 0);
  }

  /**
   * The last stream position this block would execute now: the end of the prefix its best ready
   * fuser covers, else its first operation (run unfused).
   */
  coveredEnd(): number {
    const best = bestReady(this.fusers.map((fuser) => ({ fuser })));
    const len = best === undefined ? 1 : best.fuser.len();
    return Math.max(...this.positions.slice(0, len));
  }
}

/**
 * Decides, as a lazy segment grows one operation at a time, whether waiting can still improve
 * its fusion, and how much of it to execute once it cannot. Burn's `StreamOptimizer` (its
 * registration half; the blocks themselves are cut by `scheduleBlocks`).
 *
 * @remarks
 * **Blocks.** Operations are partitioned into blocks by the tensors they share, each block with
 * its own fusers fed in stream order:
 * 1. an operation sharing no tensor with a block (lone blocks aside) starts a new block;
 * 2. sharing tensors with one block, it joins it (its fusers, when closed, ignore it: it is
 *    left for later);
 * 3. sharing tensors with several, they merge when one fuser accepts all of their operations in
 *    stream order (chains joined by a binary op); otherwise the operation starts a block of its
 *    own that depends on them.
 * A lone block (no fuser took its only operation: an `init`, an unfused reduction or matmul) is
 * never joined: what uses its result starts a new block.
 * **Stopping.** The search goes on while some block has an open fuser ({@link stillOptimizing}),
 * or until {@link maxBlocks} blocks exist (the operation that would open one more is fed but not
 * registered). Then {@link coveredPrefix} says how much to execute: every operation up to the
 * last one some block's best fusion covers; the operations after it stay pending and are explored
 * again with what follows (they become the plan's trigger).
 * **Bound.** At most `maxBlocks` blocks, each holding the positions and tensor ids of the segment
 * it was fed; {@link reset} clears them.
 */
export class BlockSearch<O> {
  readonly #prototypes: readonly OperationFuser<O>[];
  /** The segment's blocks, at most `maxBlocks`. */
  #blocks: Block<O>[] = [];
  /** The operations registered, in order (the relative operations of the segment's prefix). */
  #ops: OperationIr[] = [];
  #stopped = false;
  readonly maxBlocks: number;

  constructor(prototypes: readonly OperationFuser<O>[], maxBlocks = DEFAULT_MAX_BLOCKS) {
    this.#prototypes = prototypes;
    this.maxBlocks = maxBlocks;
  }

  /** Forgets the segment. */
  reset(): void {
    this.#blocks = [];
    this.#ops = [];
    this.#stopped = false;
  }

  /** Number of blocks (for tests). */
  get blocks(): number {
    return this.#blocks.length;
  }

  /** Whether a later operation may still change how the registered ones fuse. */
  get stillOptimizing(): boolean {
    if (this.#stopped) return false;
    if (this.#blocks.length === 0) return true;
    return this.#blocks.some((b) => b.open);
  }

  /** Registers the segment's next operation (relative form). Ignored once stopped. */
  register(op: OperationIr): void {
    if (this.#stopped) return;
    const position = this.#ops.length;
    const touched = this.#blocks.filter((b) => !b.lone && b.touches(op));
    if (touched.length === 1) {
      (touched[0] as Block<O>).add(op, position);
      this.#ops.push(op);
      return;
    }
    if (touched.length > 1) {
      const merged = new Block(this.#prototypes);
      const positions = touched.flatMap((b) => b.positions).sort((a, b) => a - b);
      for (const p of positions) merged.add(this.#ops[p] as OperationIr, p);
      merged.add(op, position);
      if (merged.wholeAccepted) {
        this.#blocks = [...this.#blocks.filter((b) => !touched.includes(b)), merged];
        this.#ops.push(op);
        return;
      }
    }
    if (this.#blocks.length >= this.maxBlocks) {
      this.#stopped = true;
      return;
    }
    const block = new Block(this.#prototypes);
    block.add(op, position);
    this.#blocks.push(block);
    this.#ops.push(op);
  }

  /** Number of operations registered. */
  get registered(): number {
    return this.#ops.length;
  }

  /**
   * How many operations of the segment to execute now, `n ≥ 1` (when any is registered): one
   * past the last position some block's best fusion covers. Operations `[0, n)` are then cut into
   * blocks by `scheduleBlocks`; the rest wait.
   */
  coveredPrefix(): number {
    let end = -1;
    for (const b of this.#blocks) end = Math.max(end, b.coveredEnd());
    return end + 1;
  }
}
