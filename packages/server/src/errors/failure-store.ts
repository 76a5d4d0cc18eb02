import { invariant } from "@weft/environment";
import type { BufferBinding } from "../binding.js";
import type { StreamMemory } from "../stream/stream-memory.js";
import type { StreamPool } from "../stream/stream-pool.js";
import { taint, taintWith, written } from "../stream/taint.js";
import { ErrorGraph, type FailureId } from "./error-graph.js";
import { type ServerError, SkippedLaunchError } from "./server-error.js";
import { TaintedReadError } from "./tainted-read-error.js";

/**
 * What a launch's read-set check found: the failure claiming an input, the input it claims, and
 * that failure's error — everything the skip needs to record and a capture needs to fail with.
 */
export interface ReadFailure {
  /** The failure claiming the input. */
  readonly failure: FailureId;
  /** The claimed input; the skip names it as what the launch needed. */
  readonly needed: BufferBinding;
  /** The failure's own error (the root's is `graph.get(graph.root(failure))`). */
  readonly error: ServerError;
}

/**
 * The taint surface a server driver uses: a stream pool (whose streams are {@link StreamMemory})
 * and one {@link ErrorGraph}, with the five things a launch or a read needs.
 *
 * @remarks
 * **Record.** Before a launch: `checkReads(reads)`. A hit → `skipLaunch(hit, writes)` (the launch
 * does not run; its writes are claimed by a failure caused by the one it read). A launch that fails
 * → `failLaunch(error, writes)`. A launch that is enqueued, or a host upload → `written(writes)`.
 * **Report.** `readError(bindings)` before a read hands back the {@link TaintedReadError} to reject
 * with, naming the root cause and the chain.
 * **Clear.** Claims go when bytes are written again or their allocation is freed; the graph prunes
 * a failure no byte and no dependent holds.
 */
export class FailureStore<S extends StreamMemory> {
  constructor(
    readonly pool: StreamPool<S>,
    readonly graph: ErrorGraph = new ErrorGraph(),
  ) {}

  /** The first binding a failure claims, with that failure; `undefined` when all are clean. */
  checkReads(bindings: Iterable<BufferBinding>): ReadFailure | undefined {
    for (const binding of bindings) {
      const failure = this.pool.tryGet(binding.stream)?.failure(binding);
      if (failure === undefined) continue;
      const error = this.graph.get(failure);
      invariant(error, () => `FailureStore: memory claims bytes for pruned failure ${failure}`);
      return { failure, needed: binding, error };
    }
    return undefined;
  }

  /** Taints `writes` with a new failure for `error`; returns it unless it claimed nothing. */
  failLaunch(error: ServerError, writes: Iterable<BufferBinding>): FailureId | undefined {
    return taint(this.pool, error, writes, this.graph);
  }

  /**
   * Records that a launch (described by `what`, e.g. its kernel key) did not run because it read
   * `readFailure.needed`: its writes are claimed by a new failure caused by `readFailure.failure`.
   */
  skipLaunch(readFailure: ReadFailure, writes: Iterable<BufferBinding>, what = "a launch"): FailureId | undefined {
    const root = this.graph.get(this.graph.root(readFailure.failure));
    invariant(root, "FailureStore.skipLaunch: the root of a live failure is live");
    const failure = this.graph.insert(new SkippedLaunchError(what, root), readFailure.failure);
    taintWith(this.pool, failure, writes, this.graph);
    return this.graph.prune(failure) ? undefined : failure;
  }

  /** The bytes `writes` name have a writer again: releases their claims. */
  written(writes: Iterable<BufferBinding>): void {
    written(this.pool, writes, this.graph);
  }

  /** The error a read of `bindings` must reject with, or `undefined` when every byte is clean. */
  readError(bindings: Iterable<BufferBinding>): TaintedReadError | undefined {
    const hit = this.checkReads(bindings);
    if (!hit) return undefined;
    const chain = this.graph.chain(hit.failure).map((id) => {
      const error = this.graph.get(id);
      invariant(error, () => `FailureStore.readError: failure ${id} of a live chain was pruned`);
      return error;
    });
    const root = chain[0];
    invariant(root, "FailureStore.readError: a chain has a root");
    return new TaintedReadError(hit.needed, hit.failure, root, chain);
  }
}
