/**
 * The free functions that record, on the memory of the stream that allocated each binding, what a
 * unit of work did or did not write (docs/concepts.md#streampool-streammemory-and-taint). Free rather than methods because the pool and the
 * graph are held apart by every caller; the surface a driver uses is `FailureStore`.
 *
 * @module
 */
import type { BufferBinding } from "../binding.js";
import type { ErrorGraph, FailureId } from "../errors/error-graph.js";
import type { ServerError } from "../errors/server-error.js";
import type { StreamMemory } from "./stream-memory.js";
import type { StreamPool } from "./stream-pool.js";

/**
 * Points the bytes every binding names at `failure`. Each binding is resolved to the stream that
 * allocated it (`pool.tryGet(binding.stream)`), which may not be the stream that failed: the fact
 * lands on the memory, wherever it lives. A binding whose slot was never initialised is skipped;
 * it is not this pool's to answer for.
 */
export function taintWith<S extends StreamMemory>(
  pool: StreamPool<S>,
  failure: FailureId,
  bindings: Iterable<BufferBinding>,
  graph: ErrorGraph,
): void {
  for (const binding of bindings) pool.tryGet(binding.stream)?.taint(binding, failure, graph);
}

/**
 * {@link taintWith} under a failure minted for `error`, pruned again when it claimed nothing: a
 * failure no byte holds has nothing to wait for. Returns the failure while it is still live.
 */
export function taint<S extends StreamMemory>(
  pool: StreamPool<S>,
  error: ServerError,
  bindings: Iterable<BufferBinding>,
  graph: ErrorGraph,
): FailureId | undefined {
  const failure = graph.insert(error);
  taintWith(pool, failure, bindings, graph);
  return graph.prune(failure) ? undefined : failure;
}

/**
 * Releases every claim on the bytes each binding names: work that writes them has been enqueued,
 * so a read of them is no longer reading bytes nothing wrote.
 */
export function written<S extends StreamMemory>(
  pool: StreamPool<S>,
  bindings: Iterable<BufferBinding>,
  graph: ErrorGraph,
): void {
  for (const binding of bindings) pool.tryGet(binding.stream)?.written(binding, graph);
}
