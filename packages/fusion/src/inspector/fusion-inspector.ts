import type { StreamId } from "@weft/environment";
import type { TensorId } from "../ir/tensor-ir.js";
import type { HandleContainer } from "../runtime/handle-container.js";
import type { ExecutedBlock } from "../stream/queue/operation-queue.js";
import type { MultiStream } from "../stream/multi-stream.js";

/**
 * Read-only views of a `FusionDevice`'s engine state, for tests, benchmarks and `weft.memory()`.
 * Burn's `FusionInspector` plus its memory checks.
 *
 * @remarks
 * **Why.** The engine's properties (no leaks, no re-exploration, what fused) are invisible from
 * tensor values; tests and benchmarks assert them here instead of on timing.
 * **Bound.** The block log keeps the last `maxLoggedBlocks` entries (oldest dropped first);
 * everything else is computed on demand from the device.
 */
export class FusionInspector {
  readonly #handles: HandleContainer<unknown>;
  readonly #streams: MultiStream<unknown>;
  readonly #liveTensors: () => number;
  readonly #maxLogged: number;
  /** Executed blocks, oldest first; at most 2 × maxLoggedBlocks, trimmed to the newest maxLoggedBlocks on read. */
  #log: ExecutedBlock[] = [];
  /** Blocks executed since construction or the last {@link FusionInspector.clearLog}, logged or not. */
  #executed = 0;

  /** @internal Built by `FusionDevice`. */
  constructor(handles: HandleContainer<unknown>, streams: MultiStream<unknown>, liveTensors: () => number, maxLoggedBlocks: number) {
    this.#handles = handles;
    this.#streams = streams;
    this.#liveTensors = liveTensors;
    this.#maxLogged = maxLoggedBlocks;
  }

  /** Live handle-container entries (handles and errors): zero at quiescence. */
  get liveHandles(): number {
    return this.#handles.size;
  }

  /** The ids with a live entry (leak reports). */
  handleIds(): TensorId[] {
    return this.#handles.ids();
  }

  /** Live `FusionTensor` wrappers. */
  get liveTensors(): number {
    return this.#liveTensors();
  }

  /** Streams holding pending operations or deferred frees: none at quiescence. */
  liveStreams(): StreamId[] {
    return this.#streams.streamIds();
  }

  /** Pending operations per live stream. */
  queueLengths(): Map<StreamId, number> {
    return new Map(this.#streams.streamIds().map((s) => [s, this.#streams.queueLength(s)]));
  }

  /** Explorations run on this device (a repeated graph adds none). */
  get explorations(): number {
    return this.#streams.budget.count;
  }

  /** Execution plans cached on this device. */
  get plans(): number {
    return this.#streams.store.size;
  }

  /** Sources whose share needed a drain and whose last wrapper is still alive. */
  get sharedSources(): number {
    return this.#streams.sharedSources.size;
  }

  /** The executed blocks, oldest first (the last `maxLoggedBlocks`). */
  get executedBlocks(): readonly ExecutedBlock[] {
    this.#trim();
    return this.#log;
  }

  /** Blocks executed since the last {@link FusionInspector.clearLog}, including unlogged ones. */
  get executedCount(): number {
    return this.#executed;
  }

  /**
   * The executed blocks as strings, `"fused elementwise[unary,binary,drop]"` or
   * `"unfused reduce[reduce]"`: a composition two runs can be compared by.
   */
  composition(stream?: StreamId): string[] {
    this.#trim();
    return this.#log
      .filter((b) => stream === undefined || b.stream === stream)
      .map((b) => `${b.fused ? "fused" : "unfused"} ${b.name}[${b.kinds.join(",")}]${b.ran === "ran" ? "" : " not-ran"}`);
  }

  /** Empties the block log. */
  clearLog(): void {
    this.#log = [];
    this.#executed = 0;
  }

  /** @internal Records an executed block. */
  record(block: ExecutedBlock): void {
    this.#executed++;
    this.#log.push(block);
    // Trimmed in batches (amortised O(1) per block): the log holds at most 2 × maxLoggedBlocks
    // between trims, and every reader trims it to the newest maxLoggedBlocks first.
    if (this.#log.length >= 2 * this.#maxLogged) this.#trim();
  }

  /** Drops the oldest blocks beyond `maxLoggedBlocks`. */
  #trim(): void {
    if (this.#log.length > this.#maxLogged) this.#log.splice(0, this.#log.length - this.#maxLogged);
  }
}
