import type { StreamId } from "@weft/environment";
import type { ErrorGraph } from "../errors/error-graph.js";
import type { ComputeStorage } from "../memory/compute-storage.js";
import type { DeviceMemory } from "../memory/device-memory.js";
import { MemoryManagement } from "../memory/memory-management.js";
import type { MemoryConfiguration } from "../memory/memory-configuration.js";
import { ClaimedStream } from "../stream/stream-memory.js";

/**
 * One stream of a {@link HostComputeServer}: its memory and the taint claims on that memory.
 *
 * @remarks
 * **Why one per stream.** A binding is answered for by the stream that allocated it (docs/concepts.md#streampool-streammemory-and-taint);
 * keeping memory and claims together makes that one lookup (`pool.tryGet(binding.stream)`).
 * **Invariant.** When an allocation's slice is freed its claims are forgotten, so claims only ever
 * name live allocations and a freed failure chain is pruned from the graph.
 */
export class HostStream extends ClaimedStream {
  /** This stream's host memory: pages and slices. */
  readonly memory: MemoryManagement<ArrayBuffer>;

  constructor(slot: StreamId, storage: ComputeStorage<ArrayBuffer>, config: MemoryConfiguration, graph: ErrorGraph, device?: DeviceMemory) {
    super();
    this.memory = new MemoryManagement(storage, config, slot, {
      onFree: (allocation) => this.claims.forget(allocation, graph),
      ...(device === undefined ? {} : { device }),
    });
  }
}
