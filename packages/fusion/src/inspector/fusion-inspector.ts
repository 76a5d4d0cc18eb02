import type { StreamId } from "@weft/environment";
import type { OperationIr } from "../ir/operation-ir.js";
import type { TensorId } from "../ir/tensor-ir.js";
import type { OperationRan } from "../runtime/fusion-runtime.js";
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
 * **Bound.** The block log keeps the last `maxLoggedBlocks` entries (oldest dropped first), in a
 * ring of parallel arrays written in place: logging a block allocates nothing once the ring is
 * full. An object per block, kept for 10,000 blocks, outlived a scavenge and was promoted: in a
 * serving process most of the log's entries became old-generation garbage
 * (docs/performance.md#what-a-request-leaves-behind). Readers get fresh {@link ExecutedBlock}s.
 * Everything else is computed on demand from the device.
 */
export class FusionInspector {
  readonly #handles: HandleContainer<unknown>;
  readonly #streams: MultiStream<unknown>;
  readonly #liveTensors: () => number;
  readonly #maxLogged: number;
  /** The ring: slot `i` of every array is one block; grows to `maxLoggedBlocks`, then wraps. */
  readonly #streamOf: StreamId[] = [];
  readonly #fusedOf: boolean[] = [];
  readonly #nameOf: string[] = [];
  readonly #kindsOf: (readonly OperationIr["kind"][])[] = [];
  readonly #ranOf: OperationRan[] = [];
  /** Blocks in the ring (at most `maxLoggedBlocks`). */
  #logged = 0;
  /** The slot the next block is written to (the oldest once the ring is full). */
  #next = 0;
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
    const blocks: ExecutedBlock[] = [];
    const start = this.#logged < this.#maxLogged ? 0 : this.#next;
    for (let k = 0; k < this.#logged; k++) {
      const i = (start + k) % this.#logged;
      blocks.push({ stream: this.#streamOf[i] as StreamId, fused: this.#fusedOf[i] as boolean, name: this.#nameOf[i] as string, kinds: this.#kindsOf[i] as OperationIr["kind"][], ran: this.#ranOf[i] as OperationRan });
    }
    return blocks;
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
    return this.executedBlocks
      .filter((b) => stream === undefined || b.stream === stream)
      .map((b) => `${b.fused ? "fused" : "unfused"} ${b.name}[${b.kinds.join(",")}]${b.ran === "ran" ? "" : " not-ran"}`);
  }

  /** Empties the block log. */
  clearLog(): void {
    // The slots stay (they are overwritten); only what they refer to is let go.
    this.#kindsOf.fill(NO_KINDS);
    this.#nameOf.fill("");
    this.#logged = 0;
    this.#next = 0;
    this.#executed = 0;
  }

  /** @internal Records an executed block (`ExecutionEnv.onBlock`): written in place, no allocation once the ring is full. */
  record(stream: StreamId, fused: boolean, name: string, kinds: readonly OperationIr["kind"][], ran: OperationRan): void {
    this.#executed++;
    if (this.#maxLogged === 0) return;
    const i = this.#next;
    this.#streamOf[i] = stream;
    this.#fusedOf[i] = fused;
    this.#nameOf[i] = name;
    this.#kindsOf[i] = kinds;
    this.#ranOf[i] = ran;
    if (this.#logged < this.#maxLogged) this.#logged++;
    this.#next = i + 1 === this.#maxLogged ? 0 : i + 1;
  }
}

/** What a cleared slot refers to (no block's kinds kept alive). */
const NO_KINDS: readonly OperationIr["kind"][] = [];
