/**
 * What the runtime did, readable by tests and benchmarks (`runtime.counters`).
 *
 * @remarks
 * **Bounded by** nothing but the process lifetime: plain monotonically increasing numbers; call
 * `resetCounters` between measurements.
 */
export interface RuntimeCounters {
  /** Kernel launches (every dispatch, fused or not). */
  launches: number;
  /** Launches that ran a fused block of more than one operation. */
  fusedLaunches: number;
  /** Outputs of fused blocks never written to memory (their last use was inside the block). */
  elidedWrites: number;
  /** Outputs written into the memory of a consumed input (in place). */
  inPlaceWrites: number;
  /** Kernel lookups served from the runtime's kernel cache (no codegen, pipeline reused). */
  pipelineCacheHits: number;
  /** Kernels generated (cache misses). */
  kernelsGenerated: number;
  /** Replayable launch signatures dropped by the per-optimization launch caches (each holds 8). */
  launchCacheEvictions: number;
}

/** Fresh zeroed counters. */
export function newCounters(): RuntimeCounters {
  return { launches: 0, fusedLaunches: 0, elidedWrites: 0, inPlaceWrites: 0, pipelineCacheHits: 0, kernelsGenerated: 0, launchCacheEvictions: 0 };
}

/** Sets every counter back to zero. */
export function resetCounters(c: RuntimeCounters): void {
  Object.assign(c, newCounters());
}
