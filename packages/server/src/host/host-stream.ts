import type { StreamId } from "@weft/environment";
import type { BufferBinding } from "../binding.js";
import type { ErrorGraph, FailureId } from "../errors/error-graph.js";
import type { ComputeStorage } from "../memory/compute-storage.js";
import type { DeviceMemory } from "../memory/device-memory.js";
import { MemoryManagement } from "../memory/memory-management.js";
import type { MemoryConfiguration } from "../memory/memory-configuration.js";
import { ByteRangeClaims, type StreamMemory } from "../stream/stream-memory.js";

/**
 * One stream of a {@link HostComputeServer}: its memory and the taint claims on that memory.
 *
 * @remarks
 * **Why one per stream.** A binding is answered for by the stream that allocated it (docs/concepts.md#streampool-streammemory-and-taint);
 * keeping memory and claims together makes that one lookup (`pool.tryGet(binding.stream)`).
 * **Invariant.** When an allocation's slice is freed its claims are forgotten, so claims only ever
 * name live allocations and a freed failure chain is pruned from the graph.
 */
export class HostStream implements StreamMemory {
  readonly claims = new ByteRangeClaims();
  readonly memory: MemoryManagement<ArrayBuffer>;

  constructor(slot: StreamId, storage: ComputeStorage<ArrayBuffer>, config: MemoryConfiguration, graph: ErrorGraph, device?: DeviceMemory) {
    this.memory = new MemoryManagement(storage, config, slot, {
      onFree: (allocation) => this.claims.forget(allocation, graph),
      ...(device === undefined ? {} : { device }),
    });
  }

  failure(binding: BufferBinding, accept?: (failure: FailureId) => boolean): FailureId | undefined {
    return this.claims.failure(binding, accept);
  }

  taint(binding: BufferBinding, failure: FailureId, graph: ErrorGraph): void {
    this.claims.taint(binding, failure, graph);
  }

  written(binding: BufferBinding, graph: ErrorGraph): void {
    this.claims.written(binding, graph);
  }
}
