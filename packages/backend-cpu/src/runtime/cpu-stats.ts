/**
 * What the CPU backend's fusion did, for tests and the inspector.
 *
 * **Invariant.** Counters only grow (monotonic since the runtime was created); they count
 * decisions made when a block executed, whatever the launch mode.
 */
export class CpuFusionStats {
  /** Fused elementwise blocks launched (one kernel launch each). */
  fusedLaunches = 0;
  /**
   * Fused launches that replayed what an earlier execution of their optimization decided for the
   * same layouts (`fusion/launch-replay.ts`) instead of building their kernel again; a subset of
   * {@link CpuFusionStats.fusedLaunches}.
   */
  replayedLaunches = 0;
  /** Block outputs written into the memory of an input that died in the block. */
  inPlaceWrites = 0;
  /** Block outputs never written because their last use lies inside the block. */
  elidedWrites = 0;
  /** Operations executed one at a time through `executeOperation` (views included). */
  unfusedOperations = 0;
}
